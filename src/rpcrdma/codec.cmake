# The pure codecs of src/rpcrdma/ (no verbs, no sockets): the list that
# the library here and the fuzz build (tests/fuzz/CMakeLists.txt) both
# compile.
set(UIW_RPCRDMA_CODEC_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/rpcrdma_hdr.c
  ${CMAKE_CURRENT_LIST_DIR}/rpcrdma_cm.c)
