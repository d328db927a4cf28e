// The build without MPI (ZT_MPI off, or no MPI found): every run has one rank.
#include <cstdlib>
#include <string>

#include "zotrain/core/error.hpp"
#include "zotrain/dist/mpi.hpp"

namespace zt::dist {

bool built_with_mpi() { return false; }

std::unique_ptr<Ranks> join(int*, char***) {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* s = std::getenv(v);
    if (s != nullptr && std::string(s) != "1")
      throw Error("started by mpirun with " + std::string(s) + " processes, but this zotrain was "
                  "built without MPI (install libopenmpi-dev and rebuild; CMake option ZT_MPI)");
  }
  return nullptr;
}

void abort_job(int) {}

}  // namespace zt::dist
