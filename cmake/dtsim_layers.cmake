# The library's layers (docs/design.md §8): DTSIM_LAYER_<folder> lists every folder whose headers
# <folder>'s code may include. Read by CMakeLists.txt at configure time and, in script mode, by the
# dtsim_layering target on every build and by a test:
#   cmake -DDTSIM_LAYERS_ROOT=DIR -P cmake/dtsim_layers.cmake
# checks every layer folder under DIR and fails with the file, the include and the rule.
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.20)  # IN_LIST and the other policies of the project itself
endif()
set(DTSIM_LAYER_core "")
set(DTSIM_LAYER_workload core)
set(DTSIM_LAYER_hardware core)
set(DTSIM_LAYER_compute core workload hardware)
set(DTSIM_LAYER_network core hardware)
set(DTSIM_LAYER_sim core workload hardware compute network)
set(DTSIM_LAYER_study core workload hardware compute network sim)
set(DTSIM_LAYER_report core workload hardware compute network sim study)
set(DTSIM_LAYERS core workload hardware compute network sim study report)
set(DTSIM_LAYER_FOLDERS ${DTSIM_LAYERS} cli tools)
set(DTSIM_LAYER_cli ${DTSIM_LAYERS})
set(DTSIM_LAYER_tools core workload hardware compute)

# Stops CMake (configure or script mode) if a source in ROOT/FOLDER includes a project header from a
# folder that DTSIM_LAYER_<FOLDER> does not list.
function(dtsim_check_includes root folder)
  file(GLOB_RECURSE sources ${root}/${folder}/*.cpp ${root}/${folder}/*.hpp)
  foreach(src ${sources})
    file(STRINGS ${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[A-Za-z_]+/")
    foreach(line ${includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([A-Za-z_]+)/.*" "\\1" dep "${line}")
      if(NOT dep STREQUAL folder AND NOT dep IN_LIST DTSIM_LAYER_${folder} AND dep IN_LIST DTSIM_LAYER_FOLDERS)
        file(RELATIVE_PATH rel ${root} ${src})
        message(FATAL_ERROR "layering: ${rel} includes ${dep}/, but ${folder}/ may include only: ${folder} ${DTSIM_LAYER_${folder}} (cmake/dtsim_layers.cmake DTSIM_LAYER_${folder}; docs/design.md §8)")
      endif()
    endforeach()
  endforeach()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED DTSIM_LAYERS_ROOT)
  foreach(folder ${DTSIM_LAYER_FOLDERS})
    dtsim_check_includes(${DTSIM_LAYERS_ROOT} ${folder})
  endforeach()
endif()
