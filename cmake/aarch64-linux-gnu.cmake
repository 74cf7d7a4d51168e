# Cross-compiling the engine and its tests for ARM64 Linux with Debian's cross toolchain
# (crossbuild-essential-arm64) against the arm64 multiarch libraries; the tests run under
# qemu-user, which emulates every extension the kernels use (-cpu max).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# The programs load Debian's arm64 multiarch libraries (libc6:arm64, libstdc++6:arm64) from
# their usual paths; with the cross toolchain's own libc (qemu's -L) new threads never start.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-cpu;max)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config reads the arm64 .pc files, not the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
