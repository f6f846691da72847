# kiln_weights_stub.cmake — run by kiln_add_model's build step after kiln
# compile (cmake -DS=DIR/NAME_weights.S -P kiln_weights_stub.cmake): kiln
# writes NAME_weights.S only when the weights went to a blob (--weights-mode=blob,
# or auto above 1 MiB), but the library's sources are fixed when CMake
# configures. When kiln wrote none, write a .S that defines nothing, so the
# library builds either way; the app tells the two apart by
# NAME_WEIGHTS_SIZE, which the header defines only for a blob.
if(NOT DEFINED S)
  message(FATAL_ERROR "kiln_weights_stub.cmake: expected -DS=PATH/NAME_weights.S")
endif()
if(NOT EXISTS "${S}")
  file(WRITE "${S}" "/* no weights blob: kiln kept this model's weights in its .c */\n"
                    "#if defined(__ELF__)\n  .section .note.GNU-stack,\"\",%progbits\n#endif\n")
endif()
