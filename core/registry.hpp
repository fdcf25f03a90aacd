#pragma once
// One registry for every family of implementations chosen by name: compute models, collective
// algorithms, training strategies. Each implementation registers itself beside its code with
// DTSIM_REGISTER (as Ramulator 2's RAMULATOR_REGISTER_IMPLEMENTATION does), so adding one is one
// file; the commands list, describe and validate names from the registry, never from a copy.
//
// Registration runs during static initialisation. The layers are static libraries linked whole
// (CMakeLists.txt: WHOLE_ARCHIVE), so no registering object is dropped for being unreferenced.
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dtsim {

template <class Interface, class... Args>
class Registry {
 public:
  struct Entry {
    std::string name;
    // Position in listings and help text (lower first); a name breaks ties. Listings keep the order
    // users know (NCCL's auto first, then the algorithms it chooses among, ...).
    int rank = 0;
    std::string help;  // one line: what it is and where its parameters come from
    std::function<std::unique_ptr<Interface>(Args...)> make;
  };

  // The one registry of this family. A function-local static: safe to use from other objects'
  // static initialisers, whatever order the linker put them in.
  static Registry& get() {
    static Registry r;
    return r;
  }

  // Returns true so that DTSIM_REGISTER can keep the call in a static initialiser.
  bool add(Entry e) {
    auto at = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& x) {
      return x.rank > e.rank || (x.rank == e.rank && x.name > e.name);
    });
    entries_.insert(at, std::move(e));
    return true;
  }

  const std::vector<Entry>& entries() const { return entries_; }

  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const Entry& e : entries_) n.push_back(e.name);
    return n;
  }

  // "a, b, c": for help text and for the error that names the choices.
  std::string joined_names() const {
    std::string s;
    for (const Entry& e : entries_) s += (s.empty() ? "" : ", ") + e.name;
    return s;
  }

  const Entry* find(const std::string& name) const {
    for (const Entry& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }

  // nullptr for a name nobody registered: the caller knows which flag to blame.
  std::unique_ptr<Interface> make(const std::string& name, Args... args) const {
    const Entry* e = find(name);
    return e ? e->make(args...) : nullptr;
  }

 private:
  std::vector<Entry> entries_;
};

#define DTSIM_REGISTRY_CONCAT_(a, b) a##b
#define DTSIM_REGISTRY_CONCAT(a, b) DTSIM_REGISTRY_CONCAT_(a, b)
// DTSIM_REGISTER(ComputeModelRegistry, {"roofline", 10, "analytical ...", [](const GpuSpec& g) {...}});
// at namespace scope in the implementation's .cpp.
#define DTSIM_REGISTER(REGISTRY, ...)                                                         \
  namespace {                                                                                 \
  [[maybe_unused]] const bool DTSIM_REGISTRY_CONCAT(dtsim_registered_, __LINE__) = REGISTRY::get().add(REGISTRY::Entry __VA_ARGS__); \
  }

}  // namespace dtsim
