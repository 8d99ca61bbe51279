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
# llhttp's generated parser scans header values and tokens 16 bytes at a time with SSE4.2
# (PCMPESTRI) when it is compiled for it; Debian's compilers target the x86-64 baseline, which
# lacks it. When the build machine has SSE4.2 (every x86-64 server CPU since 2008), llhttp is
# compiled for it: ~290 fewer instructions per proxied request (bench/callgrind.sh, the chain),
# and the daemon refuses to start on a CPU without it (http::CpuCanRunParser) rather than die
# on an illegal instruction. -DTURNPIKE_LLHTTP_SSE42=OFF builds for the baseline.
option(TURNPIKE_LLHTTP_SSE42 "compile llhttp with SSE4.2 when the build machine has it" ON)
if(TURNPIKE_LLHTTP_SSE42 AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  include(CheckCSourceRuns)
  check_c_source_runs("int main(void) { __builtin_cpu_init(); return __builtin_cpu_supports(\"sse4.2\") ? 0 : 1; }"
                      TURNPIKE_BUILD_CPU_HAS_SSE42)
  if(TURNPIKE_BUILD_CPU_HAS_SSE42)
    target_compile_options(llhttp PRIVATE -msse4.2)
    target_compile_definitions(llhttp INTERFACE TURNPIKE_LLHTTP_SSE42=1)
  endif()
endif()
