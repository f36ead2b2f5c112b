# Passes when two commands both succeed and print different things (a --model given must
# change the answer, else the bundled model answered):
#   cmake "-DFIRST=<command;args>" "-DSECOND=<command;args>" -P check_outputs_differ.cmake
execute_process(COMMAND ${FIRST} RESULT_VARIABLE first_status OUTPUT_VARIABLE first_output ERROR_VARIABLE first_error)
execute_process(COMMAND ${SECOND} RESULT_VARIABLE second_status OUTPUT_VARIABLE second_output ERROR_VARIABLE second_error)
if(NOT first_status EQUAL 0 OR NOT second_status EQUAL 0)
  message(FATAL_ERROR "a command failed:\n${first_error}\n${second_error}")
endif()
if(first_output STREQUAL second_output)
  message(FATAL_ERROR "both commands printed the same: the model given made no difference\n${first_output}")
endif()
