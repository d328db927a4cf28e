// Structural checks of an HDF5 file made before libhdf5 opens it, for what libhdf5 1.10 (Debian
// 12's) trusts and crashes on or allocates from (found by fuzz_modelnet40; docs/results/fuzz.md).
// Private to src/data.
#pragma once

#include <string>
#include <vector>

namespace zt::data::h5 {

// For the version 0 and 1 superblocks HDF5 and h5py write by default: the driver information
// block fits in the file; the root group's B-tree and local heap (cached in the root entry and
// named by the root object header's symbol-table message) are what they claim to be, and so are
// that B-tree's nodes and symbol-table nodes; and the object headers of the root group's members
// named in `datasets` hold no message shared through a shared-message table, which these
// superblock versions cannot have. Throws zt::Error naming `path`, the problem and `want` (what
// the file should have been); returns without a verdict on what it does not parse (other
// superblock versions, new-style groups), left to libhdf5.
void check_structure(const std::string& path, const std::vector<std::string>& datasets,
                     const std::string& want);

}  // namespace zt::data::h5
