#include "checkpoint.hpp"

#include <algorithm>
#include <cctype>

#include "vkformer/tensor_io.hpp"

namespace vkf::model {

Checkpoint::Checkpoint(Context& ctx, const ModelFiles& files, const std::string& file, DType precision,
                       const std::string& architecture, Blocks blocks)
    : ctx_(ctx), files_(files), file_(files, file), precision_(precision), label_(files.label()),
      architecture_(architecture), blocks_(blocks) {
  if (blocks.type && blocks.mix)
    throw Error(std::string("weights: ") + block_type_name(*blocks.type) + " and the mix " + block_mix_name(*blocks.mix) +
                " were both asked for; give one");
}

namespace {

// A Hugging Face decoder-only model's weight as llama.cpp's mixes see it (its GGUF name's
// kind and layer): Llama-family and GPT-2 names. None for anything else (an
// encoder-decoder's weights: llama.cpp states no mix for them that we could match).
std::optional<WeightPlace> weight_place(const std::string& name, uint32_t layers, bool tied) {
  if (name.find("encoder") != std::string::npos || name.find("decoder.") != std::string::npos) return std::nullopt;
  auto ends = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends("embed_tokens.weight") || ends("wte.weight"))
    return WeightPlace{.role = WeightRole::TokenEmbedding, .layers = layers, .tied = tied};
  if (name == "lm_head.weight") return WeightPlace{.role = WeightRole::Output, .layers = layers};
  static const std::pair<const char*, WeightRole> kRoles[] = {
      {".self_attn.q_proj.weight", WeightRole::AttentionQ}, {".self_attn.k_proj.weight", WeightRole::AttentionK},
      {".self_attn.v_proj.weight", WeightRole::AttentionV}, {".self_attn.o_proj.weight", WeightRole::AttentionOutput},
      {".mlp.gate_proj.weight", WeightRole::FfnGate},       {".mlp.up_proj.weight", WeightRole::FfnUp},
      {".mlp.down_proj.weight", WeightRole::FfnDown},       {".attn.c_attn.weight", WeightRole::AttentionQKV},
      {".attn.c_proj.weight", WeightRole::AttentionOutput}, {".mlp.c_fc.weight", WeightRole::FfnUp},
      {".mlp.c_proj.weight", WeightRole::FfnDown}};
  for (const auto& [tail, role] : kRoles) {
    if (!ends(tail)) continue;
    // The layer: the number before the tail ("model.layers.3.self_attn...", "h.3.attn...").
    const size_t end = name.size() - std::string(tail).size();
    size_t start = end;
    while (start > 0 && std::isdigit(static_cast<unsigned char>(name[start - 1]))) --start;
    if (start == end || end - start > 6) return std::nullopt;
    const uint32_t layer = uint32_t(std::stoul(name.substr(start, end - start)));
    if (layer >= layers) return std::nullopt;
    return WeightPlace{.role = role, .layer = layer, .layers = layers};
  }
  return std::nullopt;
}

// A stacked weight's parts in at most two runs of types (q and k, then v apart where a
// mix gives v more bits): how many from the first share its type, where every later one
// shares another; 0 where they take three types or more.
template <class T>
size_t two_runs(const std::vector<T>& types) {
  size_t first = 1;
  while (first < types.size() && types[first] == types[0]) ++first;
  for (size_t i = first; i < types.size(); ++i)
    if (types[i] != types[first]) return 0;
  return first;
}

}  // namespace

std::optional<BlockType> Checkpoint::storage(const std::vector<std::string>& names, uint32_t cols) const {
  if (blocks_.type) return block_type_for_row(*blocks_.type, cols);
  if (!blocks_.mix) return std::nullopt;
  // A weight stacked from several tensors that stacked() stores as one (gate and up, or
  // parts a mix would store apart in more than two runs) takes the widest of their types:
  // never fewer bits than llama.cpp gives any of them.
  std::optional<BlockType> widest;
  for (const std::string& name : names) {
    const auto place = weight_place(name, layers_, tied_);
    if (!place)
      throw Error("model " + label_ + ": --weights " + block_mix_name(*blocks_.mix) + " is llama.cpp's mix for " +
                      "decoder-only models (Llama family, GPT-2); it has no rule for tensor '" + name +
                      "' (model_type " + architecture_ + "): give a single block type, such as q4_k",
                  ErrorKind::Unsupported);
    const auto t = mix_block_type(*blocks_.mix, *place, cols);
    if (t && (!widest || block_bits_per_value(*t) > block_bits_per_value(*widest))) widest = t;
  }
  return widest;
}

void Checkpoint::put_weight(Linear& to, const std::vector<std::string>& names, std::vector<float> values,
                            uint32_t rows, uint32_t cols) {
  to.out = rows, to.in = cols;
  const std::string& name = names.front();
  if (const auto type = storage(names, cols)) {
    std::vector<uint8_t> blocks;
    try {
      blocks = quantize_blocks(*type, values);
    } catch (const Error& e) {
      throw Error("model " + label_ + ": tensor '" + name + "': " + e.what());
    }
    to.blocks = type;
    to.weight = upload_blocks(ctx_, *type, blocks, rows, cols, name);
    largest_ = std::max<uint64_t>(largest_, uint64_t(rows) * cols);
  } else {
    if (blocks_.type || blocks_.mix) not_in_blocks_.push_back(name);
    to.blocks.reset();
    to.weight = upload(name, std::move(values), precision_);
  }
  weight_bytes_[to.blocks ? block_type_name(*to.blocks) : to_string(precision_)] += to.weight.size();
}

void Checkpoint::put_file_weight(Linear& to, const std::vector<std::string>& names, uint32_t rows, uint32_t cols,
                                 const std::function<std::vector<float>()>& values) {
  std::vector<std::optional<SafeTensors::Blocks>> parts;
  size_t in_blocks = 0;
  for (const std::string& name : names) in_blocks += bool(parts.emplace_back(file_.blocks(name)));
  if (in_blocks == 0) {
    put_weight(to, names, values(), rows, cols);
    return;
  }
  // Weights already in llama.cpp's blocks (a GGUF file's): uploaded as they are, never
  // quantized again; stacked parts in their own types, the later ones apart where the
  // first differ (Linear::apart), as a mix stores them.
  const std::string& name = names.front();
  if (in_blocks != names.size())
    throw Error("model " + label_ + ": tensor '" + name + "' is stacked with tensors some in blocks and some not",
                ErrorKind::Unsupported);
  if (blocks_.type || blocks_.mix)
    throw Error("model " + label_ + ": tensor '" + name + "' is already in " + block_type_name(parts[0]->type) +
                    " blocks in the file: --weights is for weights stored as floats",
                ErrorKind::Unsupported);
  auto store = [&](Linear& into, size_t first, size_t end) {
    std::vector<uint8_t> bytes;
    uint32_t run_rows = 0;
    for (size_t i = first; i < end; ++i) {
      bytes.insert(bytes.end(), parts[i]->bytes.begin(), parts[i]->bytes.end());
      run_rows += names.size() == 1 ? rows : uint32_t(file_.at(names[i]).shape[0]);
    }
    into.out = run_rows, into.in = cols;
    into.blocks = parts[first]->type;
    into.weight = upload_blocks(ctx_, parts[first]->type, bytes, run_rows, cols, names[first]);
    largest_ = std::max<uint64_t>(largest_, uint64_t(run_rows) * cols);
    weight_bytes_[block_type_name(parts[first]->type)] += into.weight.size();
  };
  std::vector<BlockType> types;
  for (const auto& part : parts) types.push_back(part->type);
  const size_t first = two_runs(types);
  if (first == 0)
    throw Error("model " + label_ + ": tensor '" + name + "' is stacked with tensors in three block types",
                ErrorKind::Unsupported);
  if (first < parts.size()) {
    Linear tail;
    store(tail, first, parts.size());
    to.apart = {.weight = tail.weight, .rows = tail.out, .blocks = tail.blocks};
  }
  store(to, 0, first);
  to.out = rows;  // (the bias and the product keep every part's rows)
}

void Checkpoint::layers(const std::string& prefix, uint32_t count, const std::string& field) {
  check_layer_count(file_, label_, prefix, count, field);
  layers_ = std::max(count, 1u);
}

Buffer Checkpoint::upload(const std::string& name, std::vector<float> values, DType type) const {
  return upload_floats(ctx_, std::span<const float>(values), type, name);
}

Buffer Checkpoint::zeros(uint64_t n, const std::string& name) const {
  return upload(name, std::vector<float>(n, 0.0f), precision_);
}

void Checkpoint::tensor(Buffer& to, const std::string& name, Shape shape) {
  expect(name, std::move(shape));
  uploads_.push_back([this, &to, name] { to = upload(name, file_.floats(name), precision_); });
}

void Checkpoint::fp32_rows(Buffer& to, const std::string& name, Shape shape, uint64_t row0, uint64_t rows) {
  const uint64_t width = shape.size() > 1 ? shape[1] : 1;
  expect(name, std::move(shape));
  uploads_.push_back([this, &to, name, row0, rows, width] {
    const std::vector<float> f = file_.floats(name);
    to = upload_floats(ctx_, std::span<const float>(f.data() + row0 * width, rows * width), DType::F32, name);
  });
}

void Checkpoint::linear(Linear& to, const std::string& prefix, uint32_t out, uint32_t in) {
  to.out = out, to.in = in;
  const std::string weight = prefix + ".weight";
  expect(weight, {out, in});
  uploads_.push_back([this, &to, weight, out, in] {
    put_file_weight(to, {weight}, out, in, [&] { return file_.floats(weight); });
  });
  tensor(to.bias, prefix + ".bias", {out});
}

void Checkpoint::linear_weight(Linear& to, const std::string& name, uint32_t out, uint32_t in) {
  to.out = out, to.in = in;
  expect(name, {out, in});
  uploads_.push_back([this, &to, name, out, in] {
    put_file_weight(to, {name}, out, in, [&] { return file_.floats(name); });
    to.bias = zeros(out, name + " bias");
  });
}

void Checkpoint::embedding(Buffer& to, std::optional<BlockType>& blocks, const std::string& name, uint32_t vocab,
                           uint32_t dim) {
  expect(name, {vocab, dim});
  uploads_.push_back([this, &to, &blocks, name, vocab, dim] {
    Linear table;
    put_file_weight(table, {name}, vocab, dim, [&] { return file_.floats(name); });
    to = table.weight;
    blocks = table.blocks;
  });
}

void Checkpoint::tied_head(Linear& to, const Buffer& table, const std::optional<BlockType>& table_blocks, uint32_t out,
                           uint32_t in) {
  to.out = out, to.in = in;
  tied_ = true;  // (declared before load(): the embedding's upload sees it)
  uploads_.push_back([this, &to, &table, &table_blocks, out] {
    to.weight = table;  // declared, uploaded and counted as the embedding
    to.blocks = table_blocks;
    to.bias = zeros(out, "output projection bias");
  });
}

void Checkpoint::stacked(Linear& to, const std::vector<Part>& parts, uint32_t in, bool biases) {
  to.out = 0, to.in = in;
  for (const Part& p : parts) {
    to.out += p.out;
    expect(p.prefix + ".weight", {p.out, in});
    if (biases) expect(p.prefix + ".bias", {p.out});
  }
  uploads_.push_back([this, &to, parts, biases] {
    std::vector<float> weight, bias;
    for (const Part& p : parts) {
      if (!biases) continue;
      const auto b = file_.floats(p.prefix + ".bias");
      bias.insert(bias.end(), b.begin(), b.end());
    }
    std::vector<std::string> names;
    for (const Part& p : parts) names.push_back(p.prefix + ".weight");
    to.bias = biases ? upload(parts.front().prefix + ".bias", std::move(bias), precision_)
                     : zeros(to.out, parts.front().prefix + " bias");
    if (file_.blocks(names.front())) {  // already in blocks (a GGUF file): as they are
      put_file_weight(to, names, to.out, to.in, [] { return std::vector<float>(); });
      return;
    }
    for (const std::string& name : names) {
      const auto w = file_.floats(name);
      weight.insert(weight.end(), w.begin(), w.end());
    }
    // Where a mix stores the last parts in other blocks than the first (llama.cpp's v in
    // Q6_K after q and k in Q4_K), those rows go apart in their own; else one weight in
    // the widest of the parts' types.
    std::vector<std::optional<BlockType>> types;
    for (const std::string& name : names) types.push_back(storage({name}, to.in));
    const size_t first = two_runs(types);  // the parts stored as the first is
    if (blocks_.mix && first && first < parts.size() && types[0] && types[first]) {
      uint32_t rows = 0;
      for (size_t i = 0; i < first; ++i) rows += parts[i].out;
      const uint64_t split = uint64_t(rows) * to.in;
      std::vector<float> rest(weight.begin() + split, weight.end());
      weight.resize(split);
      Linear tail;
      put_weight(tail, {names.begin() + first, names.end()}, std::move(rest), to.out - rows, to.in);
      to.apart = {.weight = tail.weight, .rows = tail.out, .blocks = tail.blocks};
      const uint32_t out = to.out;
      put_weight(to, {names.begin(), names.begin() + first}, std::move(weight), rows, to.in);
      to.out = out;  // (the bias and the product keep every part's rows)
    } else {
      put_weight(to, names, std::move(weight), to.out, to.in);
    }
  });
}

void Checkpoint::conv1d(Linear& to, const std::string& prefix, uint32_t in, uint32_t out) {
  to.out = out, to.in = in;
  expect(prefix + ".weight", {in, out});
  uploads_.push_back([this, &to, prefix, in, out] {
    const std::string name = prefix + ".weight";
    if (file_.at(name).rows_are_outputs) {  // already [out, in] (a GGUF file's, in blocks or not)
      put_file_weight(to, {name}, out, in, [&] { return file_.floats(name); });
      return;
    }
    const auto w = file_.floats(prefix + ".weight");
    std::vector<float> t(w.size());
    for (uint64_t i = 0; i < in; ++i)
      for (uint64_t o = 0; o < out; ++o) t[o * in + i] = w[i * out + o];
    put_weight(to, {prefix + ".weight"}, std::move(t), out, in);
  });
  tensor(to.bias, prefix + ".bias", {out});
}

void Checkpoint::in_proj(Linear& qkv, const std::string& prefix, uint32_t d) {
  qkv.out = 3 * d, qkv.in = d;
  const std::string weight = prefix + ".in_proj_weight";
  expect(weight, {3ull * d, d});
  uploads_.push_back([this, &qkv, weight, d] { put_weight(qkv, {weight}, file_.floats(weight), 3 * d, d); });
  tensor(qkv.bias, prefix + ".in_proj_bias", {3ull * d});
}

void Checkpoint::in_proj(Linear& q, Linear& kv, const std::string& prefix, uint32_t d) {
  const std::string weight = prefix + ".in_proj_weight", bias = prefix + ".in_proj_bias";
  expect(weight, {3ull * d, d});
  expect(bias, {3ull * d});
  q.out = d, kv.out = 2 * d, q.in = kv.in = d;
  uploads_.push_back([this, &q, &kv, weight, bias, d] {
    auto rows = [&](const std::string& name, const std::vector<float>& f, uint64_t row0, uint64_t n, uint64_t width) {
      return upload(name, std::vector<float>(f.begin() + row0 * width, f.begin() + (row0 + n) * width), precision_);
    };
    const auto w = file_.floats(weight), b = file_.floats(bias);
    auto part = [&](uint64_t row0, uint64_t n) {
      return std::vector<float>(w.begin() + row0 * d, w.begin() + (row0 + n) * d);
    };
    put_weight(q, {weight + " (queries)"}, part(0, d), d, d);
    put_weight(kv, {weight + " (keys and values)"}, part(d, 2ull * d), 2 * d, d);
    q.bias = rows(bias, b, 0, d, 1);
    kv.bias = rows(bias, b, d, 2ull * d, 1);
  });
}

void Checkpoint::encoder_layer(EncoderLayer& to, const std::string& p, uint32_t d, uint32_t ffn) {
  in_proj(to.self_qkv, p + ".self_attn", d);
  linear(to.self_out, p + ".self_attn.out_proj", d, d);
  linear(to.ffn.linear1, p + ".linear1", ffn, d);
  linear(to.ffn.linear2, p + ".linear2", d, ffn);
  norm(to.norm1, p + ".norm1", d);
  norm(to.norm2, p + ".norm2", d);
}

void Checkpoint::norm(Norm& to, const std::string& prefix, uint32_t d) {
  tensor(to.gamma, prefix + ".weight", {d});
  tensor(to.beta, prefix + ".bias", {d});
}

void Checkpoint::rms_norm(Norm& to, const std::string& name, uint32_t d) {
  tensor(to.gamma, name, {d});
  uploads_.push_back([this, &to, name, d] { to.beta = zeros(d, name + " beta"); });
}

void Checkpoint::unread(const std::string& name) {
  if (const auto it = file_.tensors().find(name); it != file_.tensors().end()) expect(name, it->second.shape);
}

void Checkpoint::load(const std::function<void(size_t, size_t)>& progress) {
  expected_.check(file_, label_, architecture_);
  for (size_t i = 0; i < uploads_.size(); ++i) {
    uploads_[i]();
    if (progress) progress(i + 1, uploads_.size());
  }
  for (const auto& step : after_) step();
}

}  // namespace vkf::model
