#pragma once
// A std::map whose copies share one table until one of them is changed (copy on write). A cluster is
// copied for every what-if a prediction asks about (its bottleneck and limiting link, a sweep's axes),
// and the framework's tables inside it (host costs and kernel factors by key, hundreds of entries)
// never change there: sharing them makes a copy a few pointer copies instead of a few hundred nodes.
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>

namespace dtsim {

template <class K, class V>
class SharedMap {
 public:
  using Map = std::map<K, V>;
  using const_iterator = typename Map::const_iterator;

  SharedMap() = default;
  SharedMap(Map m) : map_(std::make_shared<Data>(std::move(m))) {}  // NOLINT: implicit, as a map is assigned
  SharedMap(std::initializer_list<typename Map::value_type> l) : map_(std::make_shared<Data>(Map(l))) {}

  // The table, read-only.
  const Map& get() const { return map_ ? map_->map : empty_map(); }
  operator const Map&() const { return get(); }  // NOLINT: read wherever a map is read

  const_iterator begin() const { return get().begin(); }
  const_iterator end() const { return get().end(); }
  const_iterator find(const K& k) const { return get().find(k); }
  const V& at(const K& k) const { return get().at(k); }
  size_t count(const K& k) const { return get().count(k); }
  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  bool operator==(const SharedMap& o) const { return get() == o.get(); }

  // Changing it: this copy gets a table of its own first if it shares one.
  V& operator[](const K& k) { return own()[k]; }
  void clear() { map_.reset(); }
  // The table to change; what memo() remembered of it is dropped.
  Map& own() {
    if (!map_) map_ = std::make_shared<Data>(Map());
    else if (map_.use_count() > 1) map_ = std::make_shared<Data>(Map(map_->map));
    else map_->memo.reset();
    return map_->map;
  }

  // What a reader derives from the table and keeps beside it (one Memo type per table: a lookup's
  // results by a key of its own), shared by every copy that shares the table and dropped when the
  // table changes. Null for an empty SharedMap. The caller locks memo_mutex() around its use.
  template <class Memo>
  Memo* memo() const {
    if (!map_) return nullptr;
    if (!map_->memo) map_->memo = std::make_shared<Memo>();
    return static_cast<Memo*>(map_->memo.get());
  }
  std::mutex* memo_mutex() const { return map_ ? &map_->mu : nullptr; }

 private:
  struct Data {
    explicit Data(Map m) : map(std::move(m)) {}
    Map map;
    std::mutex mu;
    std::shared_ptr<void> memo;
  };
  static const Map& empty_map() {
    static const Map m;
    return m;
  }
  std::shared_ptr<Data> map_;
};

}  // namespace dtsim
