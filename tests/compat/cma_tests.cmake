# The drop-in librdmacm.so.1's C tests (tests/compat/test_cma_*.c): they
# use the rdma_cm and verbs APIs alone and link the drop-in libraries of
# build/compat/ (not the system's), as programs do through
# LD_LIBRARY_PATH.
file(GLOB UIW_CMA_TESTS CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/tests/compat/test_cma_*.c)
foreach(src ${UIW_CMA_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(compat_${name} ${src})
  target_include_directories(compat_${name} PRIVATE
    ${CMAKE_SOURCE_DIR}/include ${CMOCKA_INCLUDE_DIRS})
  target_link_libraries(compat_${name} PRIVATE uiw_rdmacm uiw_ibverbs
    ${CMOCKA_LIBRARIES} Threads::Threads)
  add_test(NAME compat/${name} COMMAND compat_${name})
  set_tests_properties(compat/${name} PROPERTIES LABELS compat TIMEOUT 120)
endforeach()
