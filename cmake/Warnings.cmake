# Every fastcm target links fastcm_warnings: warnings on and fatal.
add_library(fastcm_warnings INTERFACE)
target_compile_options(fastcm_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wnull-dereference
  -Wimplicit-fallthrough -Werror)
