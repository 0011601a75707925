# ctest helpers. MPI tests run through the launcher CMake's FindMPI found
# (MPIEXEC_EXECUTABLE, MPIEXEC_NUMPROC_FLAG, MPIEXEC_PREFLAGS), so a cluster's
# srun or mpiexec works by setting those. With Open MPI the tests also pass
# --oversubscribe (more ranks than cores) and allow running as root, so
# `ctest` works unchanged in containers and on small machines.
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _weave_mpiexec_version
                ERROR_VARIABLE _weave_mpiexec_version RESULT_VARIABLE _weave_mpiexec_result)
set(WEAVE_MPIEXEC_EXTRA_FLAGS "")
# Launcher flags that make Open MPI move every message over its TCP
# transport (the ob1 messaging layer over the tcp BTL, no shared memory):
# the network path of the host transports, on one machine. Empty with other
# MPIs, whose tests over TCP are then reported as skipped.
set(WEAVE_MPIEXEC_TCP_FLAGS "")
if(_weave_mpiexec_version MATCHES "Open MPI|OpenRTE")
  set(WEAVE_MPIEXEC_EXTRA_FLAGS --oversubscribe)
  set(WEAVE_MPIEXEC_TCP_FLAGS --mca pml ob1 --mca btl tcp,self)
endif()
# Seconds one MPI test may run before ctest stops it (scripts/gpu/check.sh
# lowers it so that one hung test cannot take a whole GPU session).
set(WEAVE_TEST_TIMEOUT 600 CACHE STRING "Seconds one MPI test may take before ctest stops it")
set(WEAVE_TEST_ENVIRONMENT
    OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OPENBLAS_NUM_THREADS=1
    OMP_NUM_THREADS=1)

# weave_add_mpi_test(<name> <target> RANKS <n>... [ARGS ...] [LABELS ...] [TIMEOUT s]
#                    [ENVIRONMENT VAR=value...] [SKIP_RETURN_CODE code]
#                    [LAUNCHER_FLAGS flag...])
# Adds one test per rank count, named <name>.np<n>, labelled "mpi" and LABELS;
# ENVIRONMENT is added to WEAVE_TEST_ENVIRONMENT (e.g. WEAVE_TRANSPORT=ucx to
# run a host test program over another transport); LAUNCHER_FLAGS go to the
# launcher before the program (e.g. ${WEAVE_MPIEXEC_TCP_FLAGS}). A program
# that exits with SKIP_RETURN_CODE is reported as skipped.
function(weave_add_mpi_test name target)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "TIMEOUT;SKIP_RETURN_CODE" "RANKS;ARGS;LABELS;ENVIRONMENT;LAUNCHER_FLAGS")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT ${WEAVE_TEST_TIMEOUT})
  endif()
  foreach(ranks IN LISTS arg_RANKS)
    set(test_name "${name}.np${ranks}")
    add_test(NAME ${test_name}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${MPIEXEC_PREFLAGS}
                     ${WEAVE_MPIEXEC_EXTRA_FLAGS} ${arg_LAUNCHER_FLAGS} $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS}
                     ${arg_ARGS})
    set_tests_properties(${test_name} PROPERTIES
      ENVIRONMENT "${WEAVE_TEST_ENVIRONMENT};${arg_ENVIRONMENT}"
      LABELS "mpi;${arg_LABELS}"
      PROCESSORS ${ranks}
      TIMEOUT ${arg_TIMEOUT})
    if(DEFINED arg_SKIP_RETURN_CODE)
      set_tests_properties(${test_name} PROPERTIES SKIP_RETURN_CODE ${arg_SKIP_RETURN_CODE})
    endif()
  endforeach()
endfunction()
