# Reduces qemu-aarch64's `-d in_asm,exec,nochain` log of `zotrain bench --run-steps 2` to the
# blocks executed in the SECOND training step (between the 2nd and 3rd call of
# zt_bench_step_boundary), for scripts/a53-model.sh (and its helper scripts/lib/a53_model.py).
#
# Same log reading as scripts/count-insns.sh: "IN: <symbol>" starts a translated block whose
# lines "0x<pc>:  <encoding>  <mnemonic> <operands>" follow; "Trace <cpu>: <host>
# [<cs_base>/<pc>/<flags>/<cflags>] <symbol>" is one execution of the block at <pc>.
#
# Phase attribution: -v markers=FILE lists "<mangled symbol>\t<phase>" for the trainers' driver
# functions (Fp32Trainer::forward, ZoStep::perturb, Int8Trainer::backprop, softmax_xent_f32,
# ...). The phase is sticky: every executed block gets the phase of the last marker function
# that executed a block, so a kernel (gemm, pack_b_panel, perturb_gaussian_f32_neon) is charged
# to the phase of the driver that called it, and a driver's own blocks after a callee returns
# restore its phase (a call-stack approximation).
#
# Output (tab-separated):
#   E <pc> <phase> <executions> <symbol>     executions of one block in step 2, per phase
#   B <pc> <symbol>                          a block executed in step 2, then its instructions:
#   I <mnemonic and operands>
#   S <steps seen>                           number of step boundaries (3 expected)
BEGIN {
  FS = " "
  phase = "other"
  if (markers != "") {
    while ((getline line < markers) > 0) {
      split(line, m, "\t")
      mk[m[1]] = m[2]
    }
    close(markers)
  }
}
/^IN:/ { in_tb = 1; first = ""; next }
in_tb && /^0x[0-9a-f]+:/ {
  a = substr($1, 3, length($1) - 3)
  if (first == "") { first = a; n[a] = 0; txt[a] = "" }
  n[first]++
  ins = $0
  sub(/^0x[0-9a-f]+:[ \t]+[0-9a-f]+[ \t]+/, "", ins)
  txt[first] = txt[first] "I\t" ins "\n"
  next
}
in_tb { in_tb = 0 }
/^Trace / {
  s = (NF >= 5) ? $5 : ""
  if (s == "zt_bench_step_boundary") { ++seg; next }
  if (s in mk) phase = mk[s]
  if (seg == 2) {
    split($4, f, "/"); pc = f[2]; sub(/^0+/, "", pc)
    cnt[pc "\t" phase]++
    if (!(pc in esym)) esym[pc] = s
  }
}
END {
  for (k in cnt) {
    split(k, kk, "\t")
    printf "E\t%s\t%s\t%d\t%s\n", kk[1], kk[2], cnt[k], esym[kk[1]]
  }
  for (pc in esym) {
    printf "B\t%s\t%s\n", pc, esym[pc]
    printf "%s", txt[pc]
  }
  printf "S\t%d\n", seg
}
