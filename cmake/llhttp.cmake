# llhttp ships as C sources in Debian's node-llhttp package; compile them into a static library.
set(LLHTTP_SOURCE_DIR /usr/share/llhttp CACHE PATH "llhttp C sources (Debian node-llhttp)")
set(LLHTTP_INCLUDE_DIR /usr/share/include/llhttp CACHE PATH "llhttp header (Debian node-llhttp)")
if(NOT EXISTS ${LLHTTP_SOURCE_DIR}/llhttp.c OR NOT EXISTS ${LLHTTP_INCLUDE_DIR}/llhttp.h)
  message(FATAL_ERROR "llhttp not found: install the Debian package node-llhttp")
endif()
add_library(llhttp STATIC ${LLHTTP_SOURCE_DIR}/api.c ${LLHTTP_SOURCE_DIR}/http.c
                          ${LLHTTP_SOURCE_DIR}/llhttp.c)
target_include_directories(llhttp SYSTEM PUBLIC ${LLHTTP_INCLUDE_DIR})
set_target_properties(llhttp PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_compile_options(llhttp PRIVATE -w -O2)
# Strict mode: CR must be followed by LF, chunk data by CRLF, header names are tokens, and no
# controls in the request target. Everything looser is a way to smuggle requests.
target_compile_definitions(llhttp PUBLIC LLHTTP_STRICT_MODE=1)
