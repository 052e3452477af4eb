# The library's modules and what each may call: the one table that both the
# build (CMakeLists.txt: an OBJECT library per module, linked to the
# modules it USES) and the layer check (scripts/check-layers.py, a step of
# every build and the ctest `layers`) read. docs/architecture.md draws it.
#
#   ki_module(NAME [DIR dir]
#             HEADERS ...  the public headers of include/ki/ it owns
#             SHARES ...   headers of its folder that modules allowed to call
#                          it may include too (the others are its own)
#             USES ...     modules it may call; who may call it may call
#                          those as well (lower layers are reachable)
#             PRIVATE ...  modules it may call that its callers may not
#                          (index: only the store touches LMDB)
#             SYSTEM ...   system headers (fnmatch patterns) only the
#                          modules naming them may include
#             EXTERN ...   symbols of a library outside ki (patterns) only
#                          the modules naming them may call
#
# DIR defaults to src/NAME; modules outside src/ (the command, the CUDA
# kernels) are checked but built by their own CMakeLists. Every folder of
# src/ and every header of include/ki/ must belong to a module here, and
# USES must not form a cycle: the check says so otherwise. Adding a module
# is one line here, in its place among the layers (lower ones first).

ki_module(util     HEADERS status.h human.h embedded.h counter_rng.h utc.h SHARES utf8.h coding.h process.h)
ki_module(env      HEADERS env.h USES util)
ki_module(digest   HEADERS digest.h USES env SYSTEM openssl/* EXTERN SHA256_*)
ki_module(json     HEADERS json.h SHARES fields.h dump.h USES digest SYSTEM yaml-cpp/*)
ki_module(manifest HEADERS manifest.h USES json)
ki_module(index    SHARES lmdb.h USES digest SYSTEM lmdb.h EXTERN mdb_*)
ki_module(odb      HEADERS store.h store_env.h blob_stream.h gc.h tag.h generation.h index_rebuild.h dictionary.h
                   USES manifest PRIVATE index)
ki_module(ingest   HEADERS ingest.h USES odb)
ki_module(catalog  HEADERS catalog.h export.h SHARES time.h USES ingest)
ki_module(sign     HEADERS sign.h USES ingest SYSTEM sodium.h sodium/* EXTERN sodium_* crypto_* randombytes_*)
ki_module(evidence HEADERS evidence.h USES sign)
ki_module(fib      HEADERS flashinfer.h USES ingest)
ki_module(remote   HEADERS remote.h tag_sync.h USES catalog sign SYSTEM curl/*)
ki_module(stats    HEADERS stats.h USES util)
ki_module(kernels  DIR kernels HEADERS kernel_abi.h gpu_backend.h gqa_paged_decode.h USES util
                   SYSTEM cuda*.h cupti*.h nvml*.h)
ki_module(harness  HEADERS harness.h USES kernels env)
ki_module(run      HEADERS run.h USES harness stats catalog sign fib)
ki_module(history  HEADERS history.h USES catalog evidence stats)
ki_module(report   HEADERS report.h USES catalog evidence run stats)
ki_module(fleet    HEADERS fleet.h USES run remote sign evidence)
ki_module(audit    HEADERS audit.h USES catalog sign)
ki_module(cli      DIR cli USES audit history report fleet remote run SYSTEM CLI/*)
