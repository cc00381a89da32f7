// docs/models.md's C++ example ("Using it from C++"), linked against the shared library as a
// C++ application would link it: its vtables and typeinfo must be exported.
#include <cstdio>
#include <vkformer/vkformer.hpp>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];  // samples/dates
  try {
    vkf::Context ctx;                                       // the default device
    auto model = vkf::Model::load(ctx, dir);                // load once
    vkf::Session session(model);                            // one per thread
    auto tok = vkf::CharTokenizer::from_file(dir + "/vocab.json");
    auto out = session.generate({tok.encode("3/3/98")}, {.max_new_tokens = 16, .beam = 4});
    std::printf("3/3/98 -> %s\n", tok.decode(out[0]).c_str());  // 1998-03-03
  } catch (const vkf::Error& e) {                            // typeinfo for vkf::Error, from the library
    std::fprintf(stderr, "vkformer: %s\n", e.what());
    return 1;
  }
  return 0;
}
