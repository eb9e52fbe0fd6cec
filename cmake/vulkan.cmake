# The Vulkan backend (RLX_VULKAN=ON): volk, the runtime/ sources, and the shaders.
#  - volk: Debian's libvulkan-volk-dev ships volk.h + volk.c (no library); a prebuilt `volk`
#    library is used when one exists. Either way libvulkan is loaded at run time, never linked.
#  - shaders/*.comp: glslc -> SPIR-V -> spirv-val -> a generated C array each, plus a build id.
#    shaders/kernels.def is the manifest the C side uses (entry, bindings, push constants, spec
#    constants); every .comp must have an entry there and vice versa.
# Defines the layer rlx_runtime (runtime/ + the embedded shaders); rlx_vulkan_link(target) adds
# include dirs, definitions, libraries.

find_path(RLX_VOLK_INCLUDE_DIR volk.h)
find_library(RLX_VOLK_LIBRARY volk)
find_file(RLX_VOLK_SOURCE volk.c PATHS ${RLX_VOLK_INCLUDE_DIR} NO_DEFAULT_PATH)
find_path(RLX_VULKAN_HEADERS vulkan/vulkan_core.h)
find_program(RLX_GLSLC glslc)
find_program(RLX_SPIRV_VAL spirv-val)
foreach(v RLX_VOLK_INCLUDE_DIR RLX_VULKAN_HEADERS RLX_GLSLC RLX_SPIRV_VAL)
  if(NOT ${v})
    message(FATAL_ERROR "RLX_VULKAN=ON needs ${v} (Debian: libvulkan-dev libvulkan-volk-dev glslc spirv-tools; "
                        "see tools/install-deps.sh), or configure with -DRLX_VULKAN=OFF")
  endif()
endforeach()
if(NOT RLX_VOLK_LIBRARY AND NOT RLX_VOLK_SOURCE)
  message(FATAL_ERROR "volk: neither a volk library nor volk.c beside ${RLX_VOLK_INCLUDE_DIR}/volk.h was found")
endif()

set(RLX_VK_SOURCES "")
if(NOT RLX_VOLK_LIBRARY)
  # Third-party code: compiled as-is, without the project's warning flags.
  set(RLX_VOLK_COPY ${CMAKE_BINARY_DIR}/volk/volk.c)
  configure_file(${RLX_VOLK_SOURCE} ${RLX_VOLK_COPY} COPYONLY)
  set_source_files_properties(${RLX_VOLK_COPY} PROPERTIES COMPILE_OPTIONS "-w")
  list(APPEND RLX_VK_SOURCES ${RLX_VOLK_COPY})
endif()

# ---- shaders ----
file(GLOB RLX_SHADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/shaders/*.comp)
file(STRINGS ${CMAKE_SOURCE_DIR}/shaders/kernels.def RLX_KERNEL_LINES REGEX "^RLX_KERNEL\\(")
set(RLX_KERNEL_NAMES "")
foreach(line ${RLX_KERNEL_LINES})
  string(REGEX MATCH "^RLX_KERNEL\\(([a-z0-9_]+)" _ "${line}")
  list(APPEND RLX_KERNEL_NAMES ${CMAKE_MATCH_1})
endforeach()
set(RLX_SPVS "")
set(RLX_SHADER_NAMES "")
foreach(src ${RLX_SHADERS})
  get_filename_component(name ${src} NAME_WE)
  list(APPEND RLX_SHADER_NAMES ${name})
  set(spv ${CMAKE_BINARY_DIR}/shaders/${name}.spv)
  set(gen ${CMAKE_BINARY_DIR}/shaders/${name}.spv.c)
  add_custom_command(
    OUTPUT ${spv}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/shaders
    COMMAND ${RLX_GLSLC} --target-env=vulkan1.2 -fshader-stage=compute -O -Werror -I ${CMAKE_SOURCE_DIR}/shaders
            -MD -MF ${spv}.d -o ${spv} ${src}
    COMMAND ${RLX_SPIRV_VAL} --target-env vulkan1.2 ${spv}
    DEPENDS ${src}
    DEPFILE ${spv}.d
    COMMENT "glslc + spirv-val ${name}.comp"
    VERBATIM)
  add_custom_command(
    OUTPUT ${gen}
    COMMAND ${CMAKE_COMMAND} -DIN=${spv} -DOUT=${gen} -DNAME=${name} -P ${CMAKE_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPENDS ${spv} ${CMAKE_SOURCE_DIR}/cmake/embed_spirv.cmake
    VERBATIM)
  list(APPEND RLX_SPVS ${spv})
  list(APPEND RLX_VK_SOURCES ${gen})
endforeach()
foreach(k ${RLX_KERNEL_NAMES})
  if(NOT k IN_LIST RLX_SHADER_NAMES)
    message(FATAL_ERROR "shaders/kernels.def names kernel '${k}' but shaders/${k}.comp does not exist")
  endif()
endforeach()
foreach(k ${RLX_SHADER_NAMES})
  if(NOT k IN_LIST RLX_KERNEL_NAMES)
    message(FATAL_ERROR "shaders/${k}.comp has no RLX_KERNEL entry in shaders/kernels.def")
  endif()
endforeach()
set(RLX_SHADER_ID ${CMAKE_BINARY_DIR}/shaders/build_id.c)
add_custom_command(
  OUTPUT ${RLX_SHADER_ID}
  COMMAND ${CMAKE_COMMAND} -DOUT=${RLX_SHADER_ID} -DVERSION=${PROJECT_VERSION} "-DSPVS=${RLX_SPVS}"
          -P ${CMAKE_SOURCE_DIR}/cmake/shader_build_id.cmake
  DEPENDS ${RLX_SPVS} ${CMAKE_SOURCE_DIR}/cmake/shader_build_id.cmake
  VERBATIM)
list(APPEND RLX_VK_SOURCES ${RLX_SHADER_ID})

function(rlx_vulkan_link target)
  target_include_directories(${target} PUBLIC ${RLX_VOLK_INCLUDE_DIR} ${RLX_VULKAN_HEADERS})
  target_compile_definitions(${target} PUBLIC RLX_HAVE_VULKAN=1)
  if(RLX_VOLK_LIBRARY)
    target_link_libraries(${target} PUBLIC ${RLX_VOLK_LIBRARY})
  endif()
  target_link_libraries(${target} PUBLIC ${CMAKE_DL_LIBS})
endfunction()

rlx_layer(rlx_runtime GLOBS runtime/*.c EXPOSE runtime shaders/kernels.def shaders/sync_layout.h)
target_sources(rlx_runtime PRIVATE ${RLX_VK_SOURCES})
rlx_vulkan_link(rlx_runtime)
