// What was built: the release version and the source revision (`git describe --always --dirty`
// at configure time, re-read when the checkout's HEAD or index changes; "unknown" outside git).
// Runs record both in summary.json.
#pragma once

namespace zt {

inline const char* version() { return ZT_VERSION; }
const char* source_revision();

}  // namespace zt
