# COCOON_STATIC_DEPS (issue 6): every `cocoon` command is a fresh process, and
# with the libraries shared, ~35% of `cocoon --version` went to the dynamic
# loader (symbol lookups for ~30k relocations in libcrypto, the ANTLR runtime,
# libstdc++...). Debian ships archives of libcrypto, libseccomp, libcap and
# the ANTLR runtime; the imported targets the modules link by name are pointed
# at them here, so no module's CMakeLists changes. spdlog and fmt have no
# archive in Debian and stay shared (so libstdc++ does too: one copy).
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

# libcrypto.a needs libdl/pthread (FindOpenSSL adds them only when it found
# the archive itself).
set_target_properties(OpenSSL::Crypto PROPERTIES
  IMPORTED_LOCATION ${COCOON_CRYPTO_ARCHIVE}
  INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
set_property(TARGET PkgConfig::SECCOMP PROPERTY INTERFACE_LINK_LIBRARIES ${COCOON_SECCOMP_ARCHIVE})
set_property(TARGET PkgConfig::LIBCAP PROPERTY INTERFACE_LINK_LIBRARIES ${COCOON_CAP_ARCHIVE})
# grammar/CMakeLists.txt links ${ANTLR4_RUNTIME_LIB} from its find_library,
# which keeps a cached value: set the cache entry to the archive.
set(ANTLR4_RUNTIME_LIB ${COCOON_ANTLR4_ARCHIVE} CACHE FILEPATH "ANTLR4 C++ runtime (COCOON_STATIC_DEPS: the archive)" FORCE)
