/* C helpers of the Fortran binding, for what iso_c_binding cannot express:
 *   - a group communicator handed back as a Fortran handle (MPI_Comm_c2f
 *     exists only in C);
 *   - the message of an error the binding finds before calling the library
 *     (for instance a count array of the wrong length), kept per thread like
 *     the library's own message, so that the Fortran weave_last_error()
 *     returns whichever error is the latest.
 */
#include <mpi.h>
#include <string.h>

#include "weave/weave.h"

/* Functions only the Fortran module calls; declared here to keep
 * -Wmissing-prototypes quiet. */
weave_status_t weave_fortran_grid_group_comm(weave_grid_t grid, weave_group_t group, MPI_Fint* comm);
void weave_fortran_set_error(const char* message);
void weave_fortran_clear_error(void);
const char* weave_fortran_last_error(void);

static _Thread_local int binding_failed = 0;
static _Thread_local char binding_message[1024];

weave_status_t weave_fortran_grid_group_comm(weave_grid_t grid, weave_group_t group, MPI_Fint* comm) {
  MPI_Comm c_comm = MPI_COMM_NULL;
  weave_status_t status = weave_grid_group_comm(grid, group, &c_comm);
  /* Always written (MPI_COMM_NULL on failure): Fortran passes a valid reference. */
  *comm = MPI_Comm_c2f(status == WEAVE_SUCCESS ? c_comm : MPI_COMM_NULL);
  return status;
}

void weave_fortran_set_error(const char* message) {
  strncpy(binding_message, message, sizeof binding_message - 1);
  binding_message[sizeof binding_message - 1] = '\0';
  binding_failed = 1;
}

/* Called after every failed library call: the library's message is then the latest. */
void weave_fortran_clear_error(void) { binding_failed = 0; }

const char* weave_fortran_last_error(void) { return binding_failed ? binding_message : weave_last_error(); }
