# Passes when two files both exist and differ:
#   cmake -DA=<file> -DB=<file> -P check_files_differ.cmake
file(READ "${A}" a)
file(READ "${B}" b)
if(a STREQUAL b)
  message(FATAL_ERROR "${A} and ${B} are the same: the model given made no difference")
endif()
