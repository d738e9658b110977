# The pure parts of src/rpcrdma/ (no verbs, no sockets): the codecs and
# the transport's decisions (rr_plan.c, rr_layout.c).  The list that
# the library here and the fuzz build (tests/fuzz/CMakeLists.txt) both
# compile.
set(UIW_RPCRDMA_CODEC_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/rpcrdma_hdr.c
  ${CMAKE_CURRENT_LIST_DIR}/rpcrdma_cm.c
  ${CMAKE_CURRENT_LIST_DIR}/rr_plan.c
  ${CMAKE_CURRENT_LIST_DIR}/rr_layout.c)
