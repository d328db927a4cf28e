# The weights-digest regression cases: for fixed explicit settings (tests/fixtures/digest/*.json)
# each run's summary.json weights_digest must equal the one recorded in
# tests/fixtures/digest/digests.json, so a refactoring that changes any result bit fails.
# Included by tests/CMakeLists.txt (which registers one test per case) and by
# tests/cli/record_digests.cmake (which records them). A case is "<model>.<precision>.<method>";
# methods: full_bp, full_zo, cls1 (ElasticZO, C = L − 2), cls2 (C = L − 1).
set(ZT_DIGEST_MODELS lenet5 pointnet)
set(ZT_DIGEST_PRECISIONS fp32 int8)
set(ZT_DIGEST_METHODS full_bp full_zo cls1 cls2)

# zt_digest_case_args(<out> <model> <precision> <method> <synthetic dir>): the --set arguments.
function(zt_digest_case_args out model precision method synthetic)
  set(args --set model.precision=${precision})
  if(precision STREQUAL "int8")  # NITI updates by b_bp-bit rounding; Adam is an FP32 optimiser
    list(APPEND args --set optimizer.name=sgd)
  endif()
  if(method STREQUAL "cls1")
    list(APPEND args --set method.name=elastic_zo --set method.partition=zo-feat-cls1)
  elseif(method STREQUAL "cls2")
    list(APPEND args --set method.name=elastic_zo --set method.partition=zo-feat-cls2)
  else()
    list(APPEND args --set method.name=${method})
  endif()
  if(model STREQUAL "pointnet")
    list(APPEND args --set data.root=${synthetic})
  endif()
  set(${out} ${args} PARENT_SCOPE)
endfunction()

# The synthetic point clouds the PointNet cases train on (deterministic for the seed).
set(ZT_DIGEST_SYNTHETIC_ARGS --synthetic-classes 10 --synthetic-train 2 --synthetic-test 1
                             --synthetic-seed 3)
