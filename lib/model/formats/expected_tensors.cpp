#include "expected_tensors.hpp"

#include <set>

#include "vkformer/error.hpp"

namespace vkf::model {

namespace {
std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
}  // namespace

void ExpectedTensors::linear(const std::string& p, uint64_t out, uint64_t in) {
  add(p + ".weight", {out, in});
  add(p + ".bias", {out});
}

void ExpectedTensors::norm(const std::string& p, uint64_t d) {
  add(p + ".weight", {d});
  add(p + ".bias", {d});
}

void ExpectedTensors::attention(const std::string& p, uint64_t d) {
  add(p + ".in_proj_weight", {3 * d, d});
  add(p + ".in_proj_bias", {3 * d});
  linear(p + ".out_proj", d, d);
}

void ExpectedTensors::encoder_layer(const std::string& p, uint64_t d, uint64_t ffn) {
  attention(p + ".self_attn", d);
  linear(p + ".linear1", ffn, d);
  linear(p + ".linear2", d, ffn);
  norm(p + ".norm1", d);
  norm(p + ".norm2", d);
}

void ExpectedTensors::check(const SafeTensors& file, const std::string& dir, const std::string& architecture) const {
  std::set<std::string> names;
  for (auto& [name, shape] : tensors_) {
    names.insert(name);
    auto it = file.tensors().find(name);
    if (it == file.tensors().end()) throw Error("model " + dir + ": missing tensor '" + name + "'");
    if (it->second.shape != shape)
      throw Error("model " + dir + ": tensor '" + name + "' has shape " + shape_str(it->second.shape) +
                  ", the config implies " + shape_str(shape));
  }
  for (auto& [name, info] : file.tensors())
    if (!names.count(name))
      throw Error("model " + dir + ": unexpected tensor '" + name + "' (not part of a " + architecture +
                  " with this config)");
}

void check_layer_count(const SafeTensors& file, const std::string& directory, const std::string& prefix,
                       uint32_t count, const std::string& field) {
  const std::string lead = prefix + ".";
  std::set<uint64_t> layers;
  for (const auto& [name, info] : file.tensors()) {
    if (name.compare(0, lead.size(), lead) != 0) continue;
    uint64_t index = 0;
    size_t i = lead.size();
    for (; i < name.size() && i < lead.size() + 10 && name[i] >= '0' && name[i] <= '9'; ++i) index = index * 10 + (name[i] - '0');
    if (i > lead.size() && i < name.size() && name[i] == '.') layers.insert(index);
  }
  // Fewer layers than the file holds is left to ExpectedTensors::check, which names the
  // first unexpected tensor; more is refused here, before names are made for each.
  if (count > layers.size())
    throw Error("model " + directory + ": config.json's " + field + " is " + std::to_string(count) +
                ", but the checkpoint holds " +
                (layers.empty() ? std::string("no ") + prefix + ".N tensors"
                                : std::to_string(layers.size()) + " layers under " + prefix));
}

}  // namespace vkf::model
