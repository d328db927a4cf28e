#include "zotrain/data/idx.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

#include "zotrain/core/error.hpp"

namespace zt::data {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr std::size_t kImagesHeader = 16;
constexpr std::size_t kLabelsHeader = 8;
constexpr int kNumClasses = 10;
// Guards against absurd sizes (a corrupt header, or a gzip bomb): full MNIST images are 47 MB.
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 30;
constexpr std::uint32_t kMaxSide = 4096;

// The items a limit keeps of `count`: the first `limit`, or all when limit is 0 or at least
// count (a data.train_limit beyond the file is "all of it").
int kept(std::int64_t limit, int count) {
  ZT_CHECK(limit >= 0);
  return limit > 0 && limit < count ? static_cast<int>(limit) : count;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what);
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, expected an IDX file");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<std::uint8_t> bytes;
  std::uint8_t buf[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f.get());
    if (n > 0) {
      if (bytes.size() + n > kMaxBytes) {
        fail(path, "larger than " + std::to_string(kMaxBytes >> 20) + " MiB, not an MNIST-like file");
      }
      bytes.insert(bytes.end(), buf, buf + n);
    }
    if (n < sizeof buf) break;
  }
  if (std::ferror(f.get())) fail(path, std::string("read error: ") + std::strerror(errno));
  return bytes;
}

// Inflates one or more concatenated gzip members from `next(buf, cap)` (returns bytes read, 0 at
// the end) into `sink(data, n)`, in 64 KiB pieces; returns the bytes produced.
template <class Next, class Sink>
std::uint64_t inflate_stream(Next next, Sink sink, const std::string& path) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) fail(path, "zlib inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, &inflateEnd);
  std::vector<std::uint8_t> in(1 << 16);
  std::uint8_t buf[1 << 16];
  std::uint64_t produced_total = 0;
  bool eof = false;
  const auto refill = [&] {  // keeps the bytes not yet consumed in front
    std::memmove(in.data(), zs.next_in, zs.avail_in);
    const std::size_t n = next(in.data() + zs.avail_in, in.size() - zs.avail_in);
    eof = n == 0;
    zs.next_in = in.data();
    zs.avail_in += static_cast<uInt>(n);
  };
  zs.next_in = in.data();
  for (;;) {
    if (zs.avail_in == 0 && !eof) refill();
    zs.next_out = buf;
    zs.avail_out = sizeof buf;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const std::size_t produced = sizeof buf - zs.avail_out;
    if (produced_total + produced > kMaxBytes) {
      fail(path, "gzip data inflates to more than " + std::to_string(kMaxBytes >> 20) +
                     " MiB, not an MNIST-like file");
    }
    if (produced > 0) sink(buf, produced);
    produced_total += produced;
    if (rc == Z_STREAM_END) {
      // Another member may follow (as `cat a.gz b.gz` makes); anything else is garbage.
      if (zs.avail_in < 2 && !eof) refill();
      if (zs.avail_in == 0) break;
      if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
        inflateReset(&zs);
        continue;
      }
      fail(path, std::to_string(zs.avail_in) + " bytes of trailing garbage after the gzip data");
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && eof) {
      fail(path, "truncated gzip data (stream ends after " + std::to_string(produced_total) +
                     " decompressed bytes)");
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) continue;  // more input to come
    fail(path, std::string("corrupt gzip data (zlib: ") + (zs.msg ? zs.msg : zError(rc)) + ")");
  }
  return produced_total;
}

std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& in, const std::string& path) {
  std::size_t at = 0;
  std::vector<std::uint8_t> out;
  inflate_stream(
      [&](std::uint8_t* buf, std::size_t cap) {
        const std::size_t n = std::min(cap, in.size() - at);
        std::memcpy(buf, in.data() + at, n);
        at += n;
        return n;
      },
      [&](const std::uint8_t* d, std::size_t n) { out.insert(out.end(), d, d + n); }, path);
  return out;
}

void check_magic(const std::string& path, const std::vector<std::uint8_t>& b,
                 std::uint32_t expect, std::size_t header, const char* kind) {
  // The magic first (when there is one): a wrong or swapped file is the likelier mistake.
  if (b.size() >= 4 && be32(b.data()) != expect) {
    fail(path, "bad magic number " + hex32(be32(b.data())) + ", expected " + hex32(expect) +
                   " (IDX " + kind + ")");
  }
  if (b.size() < header) {
    fail(path, "file too short (" + std::to_string(b.size()) + " bytes), expected an IDX " +
                   kind + " header of " + std::to_string(header) + " bytes");
  }
}

// Exact size check: too little data is "truncated", too much is an inconsistent header.
void check_size(const std::string& path, std::uint64_t have, std::uint64_t want,
                const std::string& header_says) {
  if (have == want) return;
  fail(path, std::string(have < want ? "truncated: " : "size mismatch: ") + "header says " +
                 header_says + " (" + std::to_string(want) + " bytes with header) but the " +
                 "data holds " + std::to_string(have) + " bytes");
}

struct ImagesHeader {
  int count = 0, rows = 0, cols = 0;
};

// The header of an images file whose first bytes are `b` (all of them, or at least the header)
// and whose whole size is `size`.
ImagesHeader check_images(const std::string& path, const std::vector<std::uint8_t>& b,
                          std::uint64_t size) {
  check_magic(path, b, kImagesMagic, kImagesHeader, "images");
  const std::uint32_t count = be32(b.data() + 4), rows = be32(b.data() + 8),
                      cols = be32(b.data() + 12);
  if (rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide) {
    fail(path, "bad image size " + std::to_string(rows) + "x" + std::to_string(cols) +
                   ", expected 1.." + std::to_string(kMaxSide) + " per side");
  }
  if (count > static_cast<std::uint32_t>(std::numeric_limits<int>::max())) {
    fail(path, "absurd image count " + std::to_string(count));
  }
  const std::uint64_t want = kImagesHeader + std::uint64_t{count} * rows * cols;
  check_size(path, size, want,
             std::to_string(count) + " images of " + std::to_string(rows) + "x" +
                 std::to_string(cols));
  return {static_cast<int>(count), static_cast<int>(rows), static_cast<int>(cols)};
}

struct Images {
  ImagesHeader h;
  std::vector<std::uint8_t> bytes;  // whole file; pixels start at kImagesHeader
};

Images parse_images(const std::string& path) {
  Images im;
  im.bytes = read_maybe_gzip(path);
  im.h = check_images(path, im.bytes, im.bytes.size());
  return im;
}

std::vector<std::uint8_t> parse_labels(const std::string& path) {
  std::vector<std::uint8_t> b = read_maybe_gzip(path);
  check_magic(path, b, kLabelsMagic, kLabelsHeader, "labels");
  const std::uint32_t count = be32(b.data() + 4);
  check_size(path, b.size(), kLabelsHeader + std::uint64_t{count},
             std::to_string(count) + " labels");
  for (std::size_t i = kLabelsHeader; i < b.size(); ++i) {
    if (b[i] >= kNumClasses) {
      fail(path, "label " + std::to_string(b[i]) + " at index " +
                     std::to_string(i - kLabelsHeader) + " is out of range, expected 0.." +
                     std::to_string(kNumClasses - 1));
    }
  }
  b.erase(b.begin(), b.begin() + kLabelsHeader);
  return b;
}

}  // namespace

std::vector<std::uint8_t> read_maybe_gzip(const std::string& path) {
  std::vector<std::uint8_t> bytes = read_file(path);
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return gunzip(bytes, path);
  return bytes;
}

ImageSet load_idx_pair(const std::string& images_path, const std::string& labels_path,
                       std::int64_t limit) {
  Images im = parse_images(images_path);
  std::vector<std::uint8_t> labels = parse_labels(labels_path);
  if (labels.size() != static_cast<std::size_t>(im.h.count)) {
    throw Error(images_path + ": holds " + std::to_string(im.h.count) + " images but " +
                labels_path + " holds " + std::to_string(labels.size()) +
                " labels, expected the same count");
  }
  ImageSet set;
  set.count = kept(limit, im.h.count);
  set.rows = im.h.rows;
  set.cols = im.h.cols;
  const std::size_t n_pix = static_cast<std::size_t>(set.count) * set.rows * set.cols;
  set.pixels.assign(im.bytes.begin() + kImagesHeader, im.bytes.begin() + kImagesHeader + n_pix);
  labels.resize(set.count);
  set.labels = std::move(labels);
  return set;
}

std::string find_idx_file(const std::string& root, const std::string& stem) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw Error(root + ": data directory not found (expected " + stem + "[.gz] in it; " +
                "scripts/get-data.sh installs the full data sets)");
  }
  for (const char* ext : {"", ".gz"}) {
    const fs::path p = fs::path(root) / (stem + ext);
    if (fs::is_regular_file(p, ec)) return p.string();  // follows symlinks
  }
  throw Error((fs::path(root) / stem).string() + ": not found (neither " + stem + " nor " + stem +
              ".gz exists in " + root + ")");
}

namespace {
// Both splits of `root` by `open` (load_idx_pair or open_idx_pair), files looked up in a fixed
// order (so a missing directory is reported the same way every time), the test images the
// training images' size.
template <class Splits, class Open>
Splits both_splits(const std::string& root, std::int64_t train_limit, std::int64_t test_limit,
                   Open open) {
  const std::string train_images = find_idx_file(root, "train-images-idx3-ubyte");
  const std::string train_labels = find_idx_file(root, "train-labels-idx1-ubyte");
  const std::string test_images = find_idx_file(root, "t10k-images-idx3-ubyte");
  const std::string test_labels = find_idx_file(root, "t10k-labels-idx1-ubyte");
  Splits ds;
  ds.train = open(train_images, train_labels, train_limit);
  ds.test = open(test_images, test_labels, test_limit);
  if (ds.test.rows != ds.train.rows || ds.test.cols != ds.train.cols) {
    throw Error(test_images + ": images are " + std::to_string(ds.test.rows) + "x" +
                std::to_string(ds.test.cols) + " but the training images are " +
                std::to_string(ds.train.rows) + "x" + std::to_string(ds.train.cols));
  }
  return ds;
}
}  // namespace

ImageDataset load_image_dataset(const std::string& root, std::int64_t train_limit,
                                std::int64_t test_limit) {
  return both_splits<ImageDataset>(root, train_limit, test_limit, load_idx_pair);
}

// ---- images read by batch from disk -------------------------------------------------------

namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads exactly n bytes at `offset`, or fails naming the file (a file truncated after opening).
void pread_all(int fd, void* dst, std::size_t n, std::uint64_t offset, const std::string& path) {
  auto* p = static_cast<std::uint8_t*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path, std::string("read error: ") + std::strerror(errno));
    if (got == 0) fail(path, "unexpected end of file at byte " + std::to_string(offset) +
                                 " (was the file changed while training?)");
    p += got;
    n -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

void write_all(int fd, const std::uint8_t* p, std::size_t n, const std::string& what) {
  while (n > 0) {
    const ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) throw Error(what + ": cannot write the decompressed copy: " + std::strerror(errno));
    p += put;
    n -= static_cast<std::size_t>(put);
  }
}

// An unlinked temporary file in $TMPDIR (else /tmp).
Fd temporary_file(const std::string& for_path) {
  const char* dir = std::getenv("TMPDIR");
  std::string name = std::string(dir && *dir ? dir : "/tmp") + "/zotrain-idx-XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw Error(for_path + ": cannot create a temporary file for its decompressed copy in " +
                name.substr(0, name.rfind('/')) + ": " + std::strerror(errno) +
                " (set TMPDIR to a writable directory)");
  }
  ::unlink(name.c_str());
  return Fd(fd);
}

class IdxImageFile final : public Samples {
 public:
  IdxImageFile(Fd fd, std::string path, int count, std::size_t per,
               std::vector<std::uint8_t> labels)
      : fd_(std::move(fd)), path_(std::move(path)), count_(count), per_(per),
        labels_(std::move(labels)) {}
  int count() const override { return count_; }
  std::size_t record_bytes() const override { return per_; }
  void read(const std::int32_t* idx, int n, void* dst, std::uint8_t* labels) const override {
    auto* out = static_cast<std::uint8_t*>(dst);
    for (int b = 0; b < n; ++b) {
      ZT_CHECK(idx[b] >= 0 && idx[b] < count_);
      const auto s = static_cast<std::uint64_t>(idx[b]);
      pread_all(fd_.get(), out + static_cast<std::size_t>(b) * per_, per_,
                kImagesHeader + s * per_, path_);
      labels[b] = labels_[static_cast<std::size_t>(s)];
    }
  }
  std::size_t resident_bytes() const override { return labels_.size(); }

 private:
  Fd fd_;
  std::string path_;
  int count_;
  std::size_t per_;
  std::vector<std::uint8_t> labels_;
};

}  // namespace

ImageSplit open_idx_pair(const std::string& images_path, const std::string& labels_path,
                         std::int64_t limit) {
  std::error_code ec;
  if (std::filesystem::is_directory(images_path, ec)) {
    fail(images_path, "is a directory, expected an IDX file");
  }
  Fd in(::open(images_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) fail(images_path, std::string("cannot open: ") + std::strerror(errno));
  std::uint8_t magic[2] = {0, 0};
  const ssize_t m = ::pread(in.get(), magic, 2, 0);
  Fd data;
  std::uint64_t size = 0;
  if (m == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    data = temporary_file(images_path);
    const int src = in.get(), dst = data.get();
    size = inflate_stream(
        [&](std::uint8_t* buf, std::size_t cap) -> std::size_t {
          for (;;) {
            const ssize_t got = ::read(src, buf, cap);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) fail(images_path, std::string("read error: ") + std::strerror(errno));
            return static_cast<std::size_t>(got);
          }
        },
        [&](const std::uint8_t* d, std::size_t n) { write_all(dst, d, n, images_path); },
        images_path);
  } else {
    struct stat st {};
    if (::fstat(in.get(), &st) != 0) fail(images_path, std::string("stat: ") + std::strerror(errno));
    size = static_cast<std::uint64_t>(st.st_size);
    if (size > kMaxBytes) {
      fail(images_path, "larger than " + std::to_string(kMaxBytes >> 20) +
                            " MiB, not an MNIST-like file");
    }
    data = std::move(in);
  }
  std::vector<std::uint8_t> head(static_cast<std::size_t>(std::min<std::uint64_t>(size, kImagesHeader)));
  pread_all(data.get(), head.data(), head.size(), 0, images_path);
  const ImagesHeader h = check_images(images_path, head, size);
  std::vector<std::uint8_t> labels = parse_labels(labels_path);
  if (labels.size() != static_cast<std::size_t>(h.count)) {
    throw Error(images_path + ": holds " + std::to_string(h.count) + " images but " +
                labels_path + " holds " + std::to_string(labels.size()) +
                " labels, expected the same count");
  }
  const int count = kept(limit, h.count);
  labels.resize(static_cast<std::size_t>(count));
  ImageSplit split;
  split.rows = h.rows;
  split.cols = h.cols;
  split.samples = std::make_shared<IdxImageFile>(
      std::move(data), images_path, count,
      static_cast<std::size_t>(h.rows) * static_cast<std::size_t>(h.cols), std::move(labels));
  return split;
}

ImageFiles open_image_dataset(const std::string& root, std::int64_t train_limit,
                              std::int64_t test_limit) {
  return both_splits<ImageFiles>(root, train_limit, test_limit, open_idx_pair);
}

}  // namespace zt::data
