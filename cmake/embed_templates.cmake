# embed_templates.cmake — turn templates/*.c.in into templates_data.c, a
# table of C string literals, so the kiln binary carries its kernels.
# Usage: cmake -DOUT=file.c -DFILES="a;b" -P embed_templates.cmake
set(body "/* generated from templates/ by cmake/embed_templates.cmake */\n#include <string.h>\n#include \"emit/templates.h\"\n\nstatic const struct { const char *name, *text; } table[] = {\n")
string(REPLACE "|" ";" FILES "${FILES}")
foreach(f ${FILES})
  get_filename_component(name ${f} NAME)
  string(REGEX REPLACE "\\.c\\.in$" "" name ${name})
  file(READ ${f} text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
  string(APPEND body "  {\"${name}\",\n    \"${text}\"},\n")
endforeach()
string(APPEND body "};\n\nconst char *template_text(const char *name) {\n  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)\n    if (strcmp(table[i].name, name) == 0)\n      return table[i].text;\n  return NULL;\n}\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
