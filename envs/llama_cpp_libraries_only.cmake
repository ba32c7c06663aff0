# Included at the end of llama.cpp's project() (the Makefile passes CMAKE_PROJECT_llama.cpp_INCLUDE
# in CMAKE_ARGS). llama-cpp-python loads only libllama and libggml*, but its CMakeLists forces
# LLAMA_BUILD_COMMON on, which compiles llama.cpp's `common` library (command-line arguments, chat
# templates, an HTTP client) that nothing loads. Run after that FORCE and before llama.cpp's own
# option(), so the option keeps this value.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library" FORCE)
