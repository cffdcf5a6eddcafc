# Debian's libsimgrid-dev ships only simgrid.pc (no CMake package file), so this
# module wraps pkg-config and exposes the imported target SimGrid::SimGrid.
find_package(PkgConfig REQUIRED)
pkg_check_modules(PC_SIMGRID QUIET simgrid)

find_path(SimGrid_INCLUDE_DIR NAMES simgrid/s4u.hpp HINTS ${PC_SIMGRID_INCLUDE_DIRS})
find_library(SimGrid_LIBRARY NAMES simgrid HINTS ${PC_SIMGRID_LIBRARY_DIRS})

if(SimGrid_INCLUDE_DIR AND EXISTS "${SimGrid_INCLUDE_DIR}/simgrid/version.h")
  file(STRINGS "${SimGrid_INCLUDE_DIR}/simgrid/version.h" _sg_major REGEX "#define SIMGRID_VERSION_MAJOR")
  file(STRINGS "${SimGrid_INCLUDE_DIR}/simgrid/version.h" _sg_minor REGEX "#define SIMGRID_VERSION_MINOR")
  string(REGEX REPLACE ".*MAJOR +([0-9]+).*" "\\1" _sg_major "${_sg_major}")
  string(REGEX REPLACE ".*MINOR +([0-9]+).*" "\\1" _sg_minor "${_sg_minor}")
  set(SimGrid_VERSION "${_sg_major}.${_sg_minor}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SimGrid REQUIRED_VARS SimGrid_LIBRARY SimGrid_INCLUDE_DIR VERSION_VAR SimGrid_VERSION)

if(SimGrid_FOUND AND NOT TARGET SimGrid::SimGrid)
  add_library(SimGrid::SimGrid UNKNOWN IMPORTED)
  set_target_properties(SimGrid::SimGrid PROPERTIES IMPORTED_LOCATION "${SimGrid_LIBRARY}"
                                                    INTERFACE_INCLUDE_DIRECTORIES "${SimGrid_INCLUDE_DIR}")
endif()
mark_as_advanced(SimGrid_INCLUDE_DIR SimGrid_LIBRARY)
