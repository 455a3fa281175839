# The simulator's layers: each folder of sim/ is its own static library, declared here with the
# layers it may use. A layer compiles against an include root that holds only its own folder and
# those of the layers below it (the closure of its DEPS), so an #include "sim/X/..." of a layer not
# declared, or of one above it, fails the build. Included from the top-level CMakeLists.txt.

# The table, bottom to top: a layer lists only layers above it in this table (the order is checked).
set(CLUSTERSIM_LAYERS
    "core:"
    "config:core"
    "net:config,core"
    "coll:core,net"
    "compute:coll,config,core"
    "cost:compute,config"
    "workload:coll,compute,config,core"
    "lower:compute,core,cost,workload"
    "exec:coll,compute,core,net,workload"
    "world:coll,compute,config,core,exec,net"
    "report:coll,compute,core,cost,workload"
    "run:coll,compute,config,core,cost,exec,lower,net,report,workload,world"
    "plan:compute,config,cost,lower,net,report,run,workload"
    "trace:compute,config,core,exec,net,report,run,workload,world"
    "validation:coll,compute,config,core,exec,net,report,world"
    "verify:coll"
    "cli:coll,compute,config,core,cost,net,plan,report,run,trace,validation,verify,workload,world")

# Files of a layer that are not in its library, and files added to it.
set(CLUSTERSIM_LAYER_EXCLUDE_cli ".*/sim/cli/main\\.cc$")
set(CLUSTERSIM_LAYER_EXTRA_config ${PRESETS_CC})

set(CLUSTERSIM_LAYER_TARGETS "")
set(seen_layers "")
foreach(entry ${CLUSTERSIM_LAYERS})
  string(REPLACE ":" ";" parts "${entry}")
  list(GET parts 0 layer)
  set(deps "")
  list(LENGTH parts n)
  if(n GREATER 1)
    list(GET parts 1 deps)
    string(REPLACE "," ";" deps "${deps}")
  endif()

  # Its include root: sim/<L> for itself and for every layer it reaches through DEPS.
  set(closure ${layer})
  foreach(dep ${deps})
    if(NOT dep IN_LIST seen_layers)
      message(FATAL_ERROR "sim/layers.cmake: layer ${layer} uses ${dep}, which is not below it")
    endif()
    list(APPEND closure ${CLUSTERSIM_LAYER_CLOSURE_${dep}})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set(CLUSTERSIM_LAYER_CLOSURE_${layer} ${closure})
  set(root ${CMAKE_BINARY_DIR}/layer_roots/${layer})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root}/sim)
  foreach(reachable ${closure})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/sim/${reachable} ${root}/sim/${reachable} SYMBOLIC)
  endforeach()

  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/sim/${layer}/*.cc)
  if(CLUSTERSIM_LAYER_EXCLUDE_${layer})
    list(FILTER sources EXCLUDE REGEX "${CLUSTERSIM_LAYER_EXCLUDE_${layer}}")
  endif()
  set(target clustersim_${layer})
  add_library(${target} STATIC ${sources} ${CLUSTERSIM_LAYER_EXTRA_${layer}})
  target_include_directories(${target} PRIVATE ${root})
  set(dep_targets "")
  foreach(dep ${deps})
    list(APPEND dep_targets clustersim_${dep})
  endforeach()
  target_link_libraries(${target} PUBLIC ${dep_targets} clustersim_proto Boost::boost
                        Boost::program_options Eigen3::Eigen Threads::Threads ZLIB::ZLIB
                        nlohmann_json::nlohmann_json)
  if(MPI_CXX_FOUND)
    target_link_libraries(${target} PUBLIC MPI::MPI_CXX)
    target_compile_definitions(${target} PUBLIC CLUSTERSIM_HAVE_MPI=1)
  endif()
  list(APPEND CLUSTERSIM_LAYER_TARGETS ${target})
  list(APPEND seen_layers ${layer})
endforeach()

# Every sim/ folder must be a layer of the table.
file(GLOB layer_dirs LIST_DIRECTORIES true ${CMAKE_SOURCE_DIR}/sim/*)
foreach(dir ${layer_dirs})
  get_filename_component(name ${dir} NAME)
  if(IS_DIRECTORY ${dir} AND NOT name IN_LIST seen_layers)
    message(FATAL_ERROR "sim/layers.cmake: sim/${name} is not in CLUSTERSIM_LAYERS")
  endif()
endforeach()

# What the CLI, the tests, the benchmarks and the Python module link: every layer, and the whole
# source tree as include root.
add_library(clustersim_lib INTERFACE)
target_link_libraries(clustersim_lib INTERFACE ${CLUSTERSIM_LAYER_TARGETS})
target_include_directories(clustersim_lib INTERFACE ${CMAKE_SOURCE_DIR})
