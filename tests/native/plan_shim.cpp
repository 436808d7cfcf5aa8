// The plan (native/src/plan/) on the CPU, for tests/test_native_plan.py:
// built with the system compiler from the plan's sources alone (no GPU
// headers). Reads one case a line on stdin, `key=value` words, and writes
// one JSON object a line: what the plan says for it.
//   kind=device    arch= warp= sms= shared= sm90a=     -> the device's features
//   kind=settings                                     -> Settings{}'s defaults
//   kind=attention (device keys) half= batch= captured= layers= embedding=
//                  heads= depth= dff= smolgen= gen= compress= pe_dense=
//                  policy_layers= policy_heads= policy_depth= policy_only=
//                  sm90_gemm= norm_blocks= qkv= (settings keys)
//   kind=conv      (device keys) half= batch= channels= blocks= se=
//                  input= conv_policy= policy_planes= value_inputs=
//                  value_outputs= ready= split= pairs= clusters= (settings keys)
// Settings keys: graphs= gemm_tune= half_sums= side_stream=
// dependent_launch= mapped_io= disabled= forced= (bits, as lc0rocm.h's).
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "plan/attention_plan.h"
#include "plan/conv_plan.h"
#include "plan/limits.h"

using namespace lc0rocm;

namespace {

std::map<std::string, std::string> words(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq != std::string::npos) kv[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return kv;
}

long long num(const std::map<std::string, std::string>& kv, const char* key, long long fallback) {
  auto it = kv.find(key);
  return it == kv.end() ? fallback : std::stoll(it->second);
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\\\"") : std::string(1, c);
  return out + "\"";
}
const char* boolean(bool b) { return b ? "true" : "false"; }

DeviceInfo device_of(const std::map<std::string, std::string>& kv) {
  return device_from_arch(kv.count("arch") ? kv.at("arch") : "sm_90", static_cast<int>(num(kv, "warp", 32)),
                          static_cast<int>(num(kv, "sms", 132)), static_cast<size_t>(num(kv, "shared", 232448)),
                          num(kv, "sm90a", 1) != 0);
}

Settings settings_of(const std::map<std::string, std::string>& kv) {
  Settings s;
  s.graphs = num(kv, "graphs", s.graphs) != 0;
  s.gemm_tune = num(kv, "gemm_tune", s.gemm_tune) != 0;
  s.half_sums = num(kv, "half_sums", s.half_sums) != 0;
  s.side_stream = num(kv, "side_stream", s.side_stream) != 0;
  s.dependent_launch = static_cast<int>(num(kv, "dependent_launch", s.dependent_launch));
  s.mapped_io = static_cast<int>(num(kv, "mapped_io", s.mapped_io));
  s.disabled = static_cast<unsigned>(num(kv, "disabled", 0));
  s.forced = static_cast<unsigned>(num(kv, "forced", 0));
  return s;
}

// Enumerators' names, by their values (as the header declares them).
const char* name(AttentionKernel k) {
  static const char* const names[] = {"unfused", "scalar", "mma", "wmma", "mfma", "rdna_wmma", "qkv_sm90"};
  return names[static_cast<int>(k)];
}
const char* name(QkvOrder o) {
  static const char* const names[] = {"qkv_first", "smolgen_first", "beside", "with_compress", "one_launch"};
  return names[static_cast<int>(o)];
}
const char* name(Product p) {
  static const char* const names[] = {"blas", "gemv", "sm90", "tf32"};
  return names[static_cast<int>(p)];
}
const char* name(ConvKernel k) {
  static const char* const names[] = {"implicit", "winograd", "im2col"};
  return names[static_cast<int>(k)];
}
const char* name(TowerPath t) {
  static const char* const names[] = {"one_launch", "winograd_chain", "layer_at_a_time"};
  return names[static_cast<int>(t)];
}
const char* name(TowerLayout l) {
  static const char* const names[] = {"none", "cluster", "single", "split", "pair"};
  return names[static_cast<int>(l)];
}

std::string encoders_json(const std::vector<EncoderPlan>& plans) {
  std::string out = "[";
  for (size_t i = 0; i < plans.size(); ++i) {
    const EncoderPlan& p = plans[i];
    out += std::string(i ? ", " : "") + "{\"order\": \"" + name(p.order) + "\", \"attention\": \"" +
           name(p.attention) + "\", \"generate\": " + boolean(p.generate) + ", \"out_norm\": " +
           boolean(p.out_norm_sm90) + ", \"ffn2_norm\": " + boolean(p.ffn2_norm_sm90) + "}";
  }
  return out + "]";
}

EncoderShape encoder(const std::map<std::string, std::string>& kv, const char* prefix) {
  auto get = [&](const char* key, long long fallback) { return num(kv, (std::string(prefix) + key).c_str(), fallback); };
  EncoderShape e;
  e.heads = static_cast<int>(get("heads", 24));
  e.depth = static_cast<int>(get("depth", 32));
  e.embedding = static_cast<int>(num(kv, "embedding", 768));
  const int d_model = e.heads * e.depth, dff = static_cast<int>(num(kv, "dff", 1024));
  e.out = DenseShape{d_model, e.embedding};
  e.ffn1 = DenseShape{e.embedding, dff};
  e.ffn2 = DenseShape{dff, e.embedding};
  e.smolgen = get("smolgen", 1) != 0;
  e.gen = static_cast<int>(num(kv, "gen", 256));
  e.qkv_with_compress = e.smolgen && num(kv, "compress", 1) ? 3 * d_model + 32 : 0;
  return e;
}

void attention_case(const std::map<std::string, std::string>& kv) {
  const DeviceInfo device = device_of(kv);
  const Settings settings = settings_of(kv);
  AttentionNet net;
  net.half = num(kv, "half", 1) != 0;
  net.policy_only = num(kv, "policy_only", 0) != 0;
  net.pe_dense = num(kv, "pe_dense", 0) != 0;
  net.embedding = static_cast<int>(num(kv, "embedding", 768));
  if (!net.policy_only)
    for (int i = 0; i < num(kv, "layers", 15); ++i) net.encoders.push_back(encoder(kv, ""));
  for (int i = 0; i < num(kv, "policy_layers", 0); ++i) net.policy_encoders.push_back(encoder(kv, "policy_"));
  net.smolgen_outputs = num(kv, "smolgen", 1) ? 4096 : 0;
  const int dff = static_cast<int>(num(kv, "dff", 1024));
  net.embedding_ffn1 = DenseShape{net.embedding, dff};
  net.embedding_ffn2 = DenseShape{dff, net.embedding};
  net.policy_embedding = DenseShape{net.embedding, net.embedding};
  net.policy_query_key = DenseShape{net.embedding, 2 * net.embedding};
  Sm90Facts sm90;
  sm90.gemm = num(kv, "sm90_gemm", device.wgmma) != 0;
  sm90.layer_norm_blocks = static_cast<int>(num(kv, "norm_blocks", device.wgmma ? device.multiprocessors : 0));
  sm90.qkv_attention = num(kv, "qkv", device.wgmma) != 0;
  const AttentionRules rules = attention_rules(net, device, settings, sm90);
  const int n = static_cast<int>(num(kv, "batch", 1));
  const AttentionPlan plan = plan_attention(net, rules, device, n, num(kv, "captured", 1) != 0);
  const long long rows = 64LL * n;
  std::string products = "{";
  if (!net.encoders.empty()) {
    const EncoderShape& l = net.encoders.front();
    const DenseShape qkv{l.embedding, 3 * l.heads * l.depth};
    auto product = [&](const char* key, DenseShape shape, DenseRole role, long long r, bool first) {
      products += std::string(first ? "" : ", ") + "\"" + key + "\": \"" +
                  name(product_for(rules, device, dense_route(rules, shape, role), shape, r, true)) + "\"";
    };
    product("qkv", qkv, DenseRole::Other, rows, true);
    product("ffn1", l.ffn1, DenseRole::Sm90Product, rows, false);
    product("smolgen_dense1", DenseShape{64 * 32, 256}, DenseRole::Other, n, false);
  }
  products += "}";
  std::cout << "{\"describe\": " << quote(describe_attention(net, rules, device, n))
            << ", \"encoders\": " << encoders_json(plan.encoders)
            << ", \"policy_encoders\": " << encoders_json(plan.policy_encoders) << ", \"products\": " << products
            << ", \"norm_exchange\": " << boolean(plan.norm_exchange)
            << ", \"dependent_launch\": " << boolean(plan.dependent_launch)
            << ", \"side_lane\": " << boolean(rules.side_lane) << ", \"tf32_from_rows\": " << rules.tf32_from_rows
            << ", \"gemv_max_rows\": " << rules.gemv_max_rows << "}\n";
}

void conv_case(const std::map<std::string, std::string>& kv) {
  const DeviceInfo device = device_of(kv);
  const Settings settings = settings_of(kv);
  ConvNet net;
  net.half = num(kv, "half", 1) != 0;
  net.channels = static_cast<int>(num(kv, "channels", 64));
  const int se = static_cast<int>(num(kv, "se", 0));
  net.input = ConvShape{static_cast<int>(num(kv, "input", 112)), net.channels, 0};
  for (int i = 0; i < num(kv, "blocks", 6); ++i) {
    net.tower.push_back(ConvShape{net.channels, net.channels, 0});
    net.tower.push_back(ConvShape{net.channels, net.channels, se});
  }
  net.conv_policy = num(kv, "conv_policy", 1) != 0;
  net.policy1 = ConvShape{net.channels, net.channels, 0};
  net.policy = ConvShape{net.channels, static_cast<int>(num(kv, "policy_planes", 80)), 0};
  net.value_inputs = static_cast<int>(num(kv, "value_inputs", 128));
  net.value_outputs = static_cast<int>(num(kv, "value_outputs", 3));
  TowerFacts facts;
  facts.ready = num(kv, "ready", 0) != 0;
  facts.split_fits = num(kv, "split", 0) != 0;
  facts.pairs_fit = num(kv, "pairs", 0) != 0;
  facts.cluster_positions = static_cast<int>(num(kv, "clusters", 0));
  const BodyRules rules = body_rules(net, device, settings, facts);
  const int n = static_cast<int>(num(kv, "batch", 1));
  const ConvPlan plan = plan_conv(net, rules, device, settings, n);
  std::string layers = "[";
  for (size_t i = 0; i < plan.layers.size(); ++i) layers += std::string(i ? ", " : "") + "\"" + name(plan.layers[i]) + "\"";
  layers += "]";
  const ConvRules last = conv_rules(net.half, net.tower.back(), device, settings);
  std::cout << "{\"describe\": " << quote(describe_conv(net, rules, device, settings, n)) << ", \"tower\": \""
            << name(plan.tower) << "\", \"layout\": \"" << name(plan.layout)
            << "\", \"head_in_tower\": " << boolean(plan.head_in_tower)
            << ", \"policy_chained\": " << boolean(plan.policy_chained) << ", \"layers\": " << layers
            << ", \"fused_se\": " << boolean(last.fused_se) << ", \"value_tail\": " << boolean(rules.value_tail)
            << ", \"tower_candidate\": " << boolean(rules.tower_candidate) << "}\n";
}

void device_case(const std::map<std::string, std::string>& kv) {
  const DeviceInfo d = device_of(kv);
  std::cout << "{\"arch\": " << quote(d.arch) << ", \"nvidia\": " << boolean(d.nvidia)
            << ", \"fast_fp16\": " << boolean(d.fast_fp16) << ", \"mma_fp16\": " << boolean(d.mma_fp16)
            << ", \"mfma_fp16\": " << boolean(d.mfma_fp16) << ", \"rdna_wmma_fp16\": " << boolean(d.rdna_wmma_fp16)
            << ", \"tf32_products\": " << boolean(d.tf32_products)
            << ", \"dependent_launch\": " << boolean(d.dependent_launch) << ", \"clusters\": " << boolean(d.clusters)
            << ", \"wgmma\": " << boolean(d.wgmma) << "}\n";
}

void settings_case() {
  const Settings s;
  std::cout << "{\"graphs\": " << boolean(s.graphs) << ", \"gemm_tune\": " << boolean(s.gemm_tune)
            << ", \"half_sums\": " << boolean(s.half_sums) << ", \"side_stream\": " << boolean(s.side_stream)
            << ", \"dependent_launch\": " << s.dependent_launch << ", \"mapped_io\": " << s.mapped_io
            << ", \"disabled\": " << s.disabled << ", \"forced\": " << s.forced << "}\n";
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto kv = words(line);
    const std::string kind = kv.count("kind") ? kv.at("kind") : "";
    if (kind == "attention") attention_case(kv);
    else if (kind == "conv") conv_case(kv);
    else if (kind == "device") device_case(kv);
    else if (kind == "settings") settings_case();
    else std::cout << "{\"error\": " << quote("unknown kind " + kind) << "}\n";
  }
  return 0;
}
