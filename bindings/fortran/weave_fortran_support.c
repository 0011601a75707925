/* C helper of the Fortran binding, for what iso_c_binding cannot express: a
 * group communicator handed back as a Fortran handle (MPI_Comm_c2f exists
 * only in C). Errors the binding finds itself (a count array of the wrong
 * length) go to the library through weave_report_argument_error, so that
 * every rank reports them and weave_last_error() holds them.
 */
#include <mpi.h>

#include "weave/weave.h"

/* Only the Fortran module calls it; declared here to keep
 * -Wmissing-prototypes quiet. */
weave_status_t weave_fortran_grid_group_comm(weave_grid_t grid, weave_group_t group, MPI_Fint* comm);

weave_status_t weave_fortran_grid_group_comm(weave_grid_t grid, weave_group_t group, MPI_Fint* comm) {
  MPI_Comm c_comm = MPI_COMM_NULL;
  weave_status_t status = weave_grid_group_comm(grid, group, &c_comm);
  /* Always written (MPI_COMM_NULL on failure): Fortran passes a valid reference. */
  *comm = MPI_Comm_c2f(status == WEAVE_SUCCESS ? c_comm : MPI_COMM_NULL);
  return status;
}
