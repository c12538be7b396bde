# COCOON_STATIC_DEPS (issue 6): every `cocoon` command is a fresh process, and
# with the libraries shared, ~35% of `cocoon --version` went to the dynamic
# loader (symbol lookups for ~30k relocations in libcrypto, the ANTLR runtime,
# libstdc++...). Debian ships archives of libcrypto, libseccomp, libcap,
# libsodium and the ANTLR runtime; the imported targets the modules link by name are pointed
# at them here, so no module's CMakeLists changes. spdlog and fmt have no
# archive in Debian but ship header-only targets (the top-level CMakeLists
# picks spdlog::spdlog_header_only), so with no shared C++ library left,
# libstdc++ and libgcc are linked statically too: only libc and libm remain
# for the dynamic loader. `cocoon --version` went from 4.0 ms to ~1 ms.
# Archives are compiled as PIE by Debian's default flags, so they link into
# our PIE executables.
function(cocoon_find_archive var name)
  find_library(${var} NAMES ${name} NO_CACHE)
  if(NOT ${var})
    message(FATAL_ERROR "COCOON_STATIC_DEPS: ${name} not found; install the -dev package or pass -DCOCOON_STATIC_DEPS=OFF")
  endif()
  set(${var} ${${var}} PARENT_SCOPE)
endfunction()

cocoon_find_archive(COCOON_CRYPTO_ARCHIVE libcrypto.a)
cocoon_find_archive(COCOON_SECCOMP_ARCHIVE libseccomp.a)
cocoon_find_archive(COCOON_CAP_ARCHIVE libcap.a)
cocoon_find_archive(COCOON_ANTLR4_ARCHIVE libantlr4-runtime.a)
cocoon_find_archive(COCOON_SODIUM_ARCHIVE libsodium.a)

# libcrypto.a needs libdl/pthread (FindOpenSSL adds them only when it found
# the archive itself).
set_target_properties(OpenSSL::Crypto PROPERTIES
  IMPORTED_LOCATION ${COCOON_CRYPTO_ARCHIVE}
  INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
set_property(TARGET PkgConfig::SECCOMP PROPERTY INTERFACE_LINK_LIBRARIES ${COCOON_SECCOMP_ARCHIVE})
set_property(TARGET PkgConfig::LIBCAP PROPERTY INTERFACE_LINK_LIBRARIES ${COCOON_CAP_ARCHIVE})
# libsodium.a (audit's Ed25519 verify) uses pthread for sodium_init's lock.
set_property(TARGET PkgConfig::SODIUM PROPERTY INTERFACE_LINK_LIBRARIES "${COCOON_SODIUM_ARCHIVE};Threads::Threads")
# grammar/CMakeLists.txt links ${ANTLR4_RUNTIME_LIB} from its find_library,
# which keeps a cached value: set the cache entry to the archive.
set(ANTLR4_RUNTIME_LIB ${COCOON_ANTLR4_ARCHIVE} CACHE FILEPATH "ANTLR4 C++ runtime (COCOON_STATIC_DEPS: the archive)" FORCE)

# spdlog's header-only target names the shared fmt::fmt; point it at fmt's
# header-only target (FMT_HEADER_ONLY) instead. Runs after find_package(spdlog).
function(cocoon_use_header_only_fmt)
  set_property(TARGET spdlog::spdlog_header_only PROPERTY
    INTERFACE_LINK_LIBRARIES "Threads::Threads;fmt::fmt-header-only")
endfunction()

# No shared C++ library is left (spdlog and fmt are header-only here), so
# libstdc++'s ~5k relocations no longer run at every start.
add_link_options(-static-libstdc++ -static-libgcc)

# The PIE executable still carries ~26k relative relocations (vtables, tables
# of pointers). DT_RELR (binutils 2.38+, glibc 2.36+; Debian 12 has both)
# stores them as bitmaps: a smaller file and a faster start.
include(CheckLinkerFlag)
check_linker_flag(CXX "-Wl,-z,pack-relative-relocs" COCOON_HAVE_RELR)
if(COCOON_HAVE_RELR)
  add_link_options(-Wl,-z,pack-relative-relocs)
endif()
