# SPDX-License-Identifier: MIT
# heapkit_lab_python(<var>): set <var> to a Python that can import pytest and
# numpy (what the lab's tests need), the lab's .venv first, else the system's;
# to "" when there is none.
include_guard(GLOBAL)

function(heapkit_lab_python var)
  set(found "")
  find_package(Python3 COMPONENTS Interpreter QUIET)
  foreach(candidate "${PROJECT_SOURCE_DIR}/.venv/bin/python" "${Python3_EXECUTABLE}")
    if(NOT found AND candidate AND EXISTS "${candidate}")
      execute_process(COMMAND "${candidate}" -c "import pytest, numpy" RESULT_VARIABLE missing
                      OUTPUT_QUIET ERROR_QUIET)
      if(missing EQUAL 0)
        set(found "${candidate}")
      endif()
    endif()
  endforeach()
  set(${var} "${found}" PARENT_SCOPE)
endfunction()
