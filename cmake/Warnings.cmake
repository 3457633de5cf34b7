# Every fastcm target links fastcm_warnings: warnings on and fatal. (-Wnull-dereference is left out:
# GCC 12 at -O2 reports it inside libstdc++ stream iterators, where no null can occur.)
add_library(fastcm_warnings INTERFACE)
target_compile_options(fastcm_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wimplicit-fallthrough -Werror)
