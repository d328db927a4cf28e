// Writes the binary seed corpora of the fuzz harnesses, each a small valid file (or pair) of its
// format: DIR/idx, DIR/modelnet40, DIR/checkpoint, and DIR/config.dict (one token per config key).
//   fuzz_make_seeds DIR
// The committed corpora (tests/fuzz/corpus) came from it; the config seeds are copies of
// shipped configs and fixtures.
#include <hdf5.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "zotrain/run/engine.hpp"
#include "run_state.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/data/synthetic_points.hpp"
#include "zotrain/run/checkpoint.hpp"

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

void put(const fs::path& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

Bytes get(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const Bytes kLabelsSeparator = {'Z', 'T', 'L', 'A', 'B', 'E', 'L', 'S'};

void be32(Bytes& b, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

Bytes idx_images(std::uint32_t n, std::uint32_t rows, std::uint32_t cols) {
  Bytes b = {0, 0, 8, 3};
  be32(b, n);
  be32(b, rows);
  be32(b, cols);
  for (std::uint32_t i = 0; i < n * rows * cols; ++i) b.push_back(static_cast<std::uint8_t>(i * 37));
  return b;
}

Bytes idx_labels(std::uint32_t n) {
  Bytes b = {0, 0, 8, 1};
  be32(b, n);
  for (std::uint32_t i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>((i * 3) % 10));
  return b;
}

Bytes gzip(const Bytes& in) {
  z_stream zs{};
  if (deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2");
  Bytes out(deflateBound(&zs, in.size()) + 32);
  zs.next_in = const_cast<Bytes::value_type*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

void write_idx(const fs::path& dir) {
  fs::create_directories(dir);
  const Bytes im = idx_images(3, 5, 4), lab = idx_labels(3);
  put(dir / "plain-3x5x4", cat({im, kLabelsSeparator, lab}));
  put(dir / "gzip-3x5x4", cat({gzip(im), kLabelsSeparator, gzip(lab)}));
  put(dir / "plain-2x28x28-made-labels", idx_images(2, 28, 28));
  const Bytes im2 = idx_images(4, 3, 3);
  const Bytes first(im2.begin(), im2.begin() + 20), rest(im2.begin() + 20, im2.end());
  put(dir / "gzip-two-members-4x3x3", cat({gzip(first), gzip(rest), kLabelsSeparator, idx_labels(4)}));
}

// data [n, p, 3] of `data_type` stored as float64 or float32, label [n] or [n, 1] of `label_type`;
// chunked with deflate when `deflate` is set.
void write_h5(const fs::path& path, int n, int p, hid_t data_type, hid_t label_type, int label_rank,
              bool deflate) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t ddims[3] = {static_cast<hsize_t>(n), static_cast<hsize_t>(p), 3};
  const hsize_t ldims[2] = {static_cast<hsize_t>(n), 1};
  std::vector<double> pts(static_cast<std::size_t>(n) * p * 3);
  for (std::size_t i = 0; i < pts.size(); ++i) pts[i] = 0.01 * static_cast<double>(i % 97) - 0.4;
  std::vector<int> labels(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) labels[static_cast<std::size_t>(i)] = (i * 7) % 40;
  const hid_t dspace = H5Screate_simple(3, ddims, nullptr);
  const hid_t lspace = H5Screate_simple(label_rank, ldims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (deflate) {
    const hsize_t chunk[3] = {1, static_cast<hsize_t>(p), 3};
    H5Pset_chunk(dcpl, 3, chunk);
    H5Pset_deflate(dcpl, 4);
  }
  const hid_t d = H5Dcreate2(file, "data", data_type, dspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  const hid_t l = H5Dcreate2(file, "label", label_type, lspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d < 0 || l < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, pts.data()) < 0 ||
      H5Dwrite(l, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data()) < 0)
    throw std::runtime_error("cannot write " + path.string());
  H5Dclose(d);
  H5Dclose(l);
  H5Pclose(dcpl);
  H5Sclose(dspace);
  H5Sclose(lspace);
  H5Fclose(file);
}

void write_modelnet40(const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path tmp = dir / "synthetic.tmp";
  zt::data::SyntheticOptions opt;
  opt.classes = 10;
  opt.train_per_class = 1;
  opt.test_per_class = 1;
  opt.points = 8;
  zt::data::write_synthetic_modelnet(tmp.string(), opt);
  fs::copy_file(tmp / "ply_data_train0.h5", dir / "synthetic-10x8-float32-uint8", fs::copy_options::overwrite_existing);
  fs::remove_all(tmp);
  write_h5(dir / "float64-int32-rank1-3x5", 3, 5, H5T_IEEE_F64LE, H5T_STD_I32LE, 1, false);
  write_h5(dir / "float32-int16-deflate-2x6", 2, 6, H5T_IEEE_F32LE, H5T_STD_I16BE, 2, true);
}

// The header of a checkpoint written by save_checkpoint, prefixed with its data size (the
// harness appends that many zero bytes).
Bytes header_only(const fs::path& path) {
  const Bytes b = get(path);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t{b[static_cast<std::size_t>(i)]} << (8 * i);
  const std::uint32_t zeros = static_cast<std::uint32_t>(b.size() - 8 - n);
  Bytes out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(zeros >> (8 * i)));
  out.insert(out.end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(8 + n));
  return out;
}

void write_checkpoints(const fs::path& dir) {
  fs::create_directories(dir);
  for (const char* precision : {"fp32", "int8"}) {
    const zt::config::ExperimentConfig cfg = zt::config::parse_config(
        std::string(R"({"name": "seed", "model": {"precision": ")") + precision +
            R"("}, "method": {"partition": "zo-feat-cls1"}, "optimizer": {"name": "sgd"},
                "train": {"batch_size": 8, "threads": 1}})",
        "seed", {});
    auto engine = cfg.model.precision == zt::config::Precision::kInt8
                      ? zt::run::make_int8_engine(cfg, 8, 1)
                      : zt::run::make_fp32_engine(cfg, 8, 1);
    zt::run::RunState st;
    st.epoch = 1;
    st.step_in_epoch = 2;
    st.global_step = 10;  // = epoch × 8 + step_in_epoch: the harness's 8 steps per epoch
    st.train_seconds = 1.5;
    st.acc.steps = 2;
    st.acc.samples = 16;  // 2 steps of batch 8
    const fs::path tmp = dir / "checkpoint.tmp";
    zt::run::save_checkpoint(tmp.string(), *engine, cfg, st);
    put(dir / (std::string("lenet5-") + precision + "-header-zero-weights"), header_only(tmp));
    fs::remove(tmp);
  }
  // A small complete file of every dtype, an empty tensor and metadata (Z = 0).
  zt::run::TensorFile f;
  f.tensors["a.weight"] = {"F32", {2, 3}, Bytes(24, 0x3f)};
  f.tensors["b.index"] = {"I32", {4}, Bytes(16, 1)};
  f.tensors["c.q"] = {"I8", {1, 5}, Bytes(5, 0x80)};
  f.tensors["d.empty"] = {"F32", {0, 4}, {}};
  f.metadata["format"] = "zotrain-checkpoint-2";
  f.metadata["global_step"] = "3";
  const fs::path tmp = dir / "small.tmp";
  zt::run::write_safetensors(tmp.string(), f);
  put(dir / "small-all-dtypes", cat({Bytes(4, 0), get(tmp)}));
  fs::remove(tmp);
}

void write_config_dict(const fs::path& path) {
  std::ofstream out(path);
  out << "# Tokens of the experiment config: every key (as a JSON member and as a --set line),\n"
         "# written by fuzz_make_seeds.\n";
  out << "set=\"--set \"\n";
  int i = 0;
  for (const std::string& key : zt::config::key_names()) {
    const std::string leaf = key.substr(key.rfind('.') + 1);
    out << "k" << i << "=\"\\\"" << leaf << "\\\":\"\n";
    out << "s" << i << "=\"--set " << key << "=\"\n";
    ++i;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds DIR\n");
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    write_idx(dir / "idx");
    write_modelnet40(dir / "modelnet40");
    write_checkpoints(dir / "checkpoint");
    write_config_dict(dir / "config.dict");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
