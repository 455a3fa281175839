# The clustersim Python package: the _core extension (python/core_module.cc, linking the simulator
# library) beside the package's Python files, all in ${CMAKE_BINARY_DIR}/python/clustersim.
# Included from the top-level CMakeLists.txt once Python3 and pybind11 are found.

# A shared module links the static library, so the library is built position-independent;
# no-semantic-interposition keeps calls inside it as direct (and inlinable) as in an executable.
set_target_properties(clustersim_proto ${CLUSTERSIM_LAYER_TARGETS} PROPERTIES
                      POSITION_INDEPENDENT_CODE ON)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  foreach(target ${CLUSTERSIM_LAYER_TARGETS})
    target_compile_options(${target} PRIVATE -fno-semantic-interposition)
  endforeach()
endif()

set(CLUSTERSIM_PYTHON_DIR ${CMAKE_BINARY_DIR}/python)
# NO_EXTRAS: no link-time optimisation nor stripping, which would make CI's build slower.
pybind11_add_module(clustersim_python MODULE NO_EXTRAS ${CMAKE_SOURCE_DIR}/python/core_module.cc)
target_link_libraries(clustersim_python PRIVATE clustersim_lib)
set_target_properties(clustersim_python PROPERTIES OUTPUT_NAME _core
                      LIBRARY_OUTPUT_DIRECTORY ${CLUSTERSIM_PYTHON_DIR}/clustersim)

# The package's Python files, copied again whenever they change (configure_file tracks them).
file(GLOB CLUSTERSIM_PY_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/clustersim/*.py)
foreach(file ${CLUSTERSIM_PY_FILES})
  get_filename_component(name ${file} NAME)
  configure_file(${file} ${CLUSTERSIM_PYTHON_DIR}/clustersim/${name} COPYONLY)
endforeach()

if(CLUSTERSIM_TESTS)
  enable_testing()
  add_test(NAME python_tests
           COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider
                   ${CMAKE_SOURCE_DIR}/python/tests)
  set_tests_properties(python_tests PROPERTIES
    ENVIRONMENT "PYTHONPATH=${CLUSTERSIM_PYTHON_DIR};PYTHONDONTWRITEBYTECODE=1;CLUSTERSIM_BIN=$<TARGET_FILE:clustersim>;CLUSTERSIM_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
    TIMEOUT 300)
endif()
