// Data-parallel runs under mpirun (docs/design.md §15): the MPI implementation of zt::Ranks.
// Built when CMake finds MPI (option ZT_MPI); without it, join() always returns null.
#pragma once

#include <memory>

#include "zotrain/core/ranks.hpp"

namespace zt::dist {

// Whether this binary was built with MPI.
bool built_with_mpi();
// Joins the MPI job when mpirun (or another MPI launcher) started this process, as its
// environment says, and returns the job's ranks (MPI_Finalize when destroyed); otherwise null,
// and the run has one rank. Throws zt::Error when started by mpirun but built without MPI.
std::unique_ptr<Ranks> join(int* argc, char*** argv);
// Ends every rank of the job with `code` (MPI_Abort): one rank's error must not leave the others
// waiting in a collective. A no-op without a job.
void abort_job(int code);

}  // namespace zt::dist
