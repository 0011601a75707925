# Runs the ScaLAPACK program as written and with PDGEMM renamed to
# WEAVE_PDGEMM, at 4 processes, and requires the same output from both.
foreach(program ORIGINAL RENAMED)
  execute_process(COMMAND ${LAUNCH} ${NP_FLAG} 4 ${EXTRA} ${${program}}
                  OUTPUT_VARIABLE out_${program} ERROR_VARIABLE err_${program} RESULT_VARIABLE rc_${program})
  message("${program} (${${program}}):\n${out_${program}}")
  if(NOT rc_${program} EQUAL 0 OR NOT out_${program} MATCHES "checksum")
    message(FATAL_ERROR "FAIL: ${program} exited with ${rc_${program}}:\n${err_${program}}")
  endif()
endforeach()
if(NOT out_ORIGINAL STREQUAL out_RENAMED)
  message(FATAL_ERROR "FAIL: the program with WEAVE_PDGEMM printed something else than with PDGEMM")
endif()
message("PASS: the same output with PDGEMM and WEAVE_PDGEMM")
