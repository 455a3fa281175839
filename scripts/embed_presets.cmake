# Writes a C++ file holding every preset text file, so the binary needs no data directory.
# Inputs: OUT (file to write), ROOT (source root), FILES (list of preset files).
set(body "// Generated from topologies/, workloads/ and stacks/ by scripts/embed_presets.cmake.\n")
string(APPEND body "#include \"sim/config/embedded_presets.h\"\n\nnamespace cs {\n\n")
string(APPEND body "const std::vector<EmbeddedFile>& embedded_presets() {\n")
string(APPEND body "  static const std::vector<EmbeddedFile> files = {\n")
foreach(f ${FILES})
  file(RELATIVE_PATH rel ${ROOT} ${f})
  file(READ ${f} content)
  string(APPEND body "      {\"${rel}\", R\"cs_preset(${content})cs_preset\"},\n")
endforeach()
string(APPEND body "  };\n  return files;\n}\n\n}  // namespace cs\n")
file(WRITE ${OUT} "${body}")
