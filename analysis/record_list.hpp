#pragma once
// The timeline's records as a list that a folded replay does not
// materialise (docs/performance.md, "The fold"). It holds the records the
// replay made; once a fold's images are set (expand), it reads as the full
// replay's list: each recorded record followed by its images 1 .. n-1 (n = m,
// or 1 for a record that is its own image), each image computed when it is
// read. Memory scales with the quotient, reading with the output.
//
// Reading (size, iteration, operator[]) gives records by value; writing
// (push_back, reserve, recorded()) is for the replay and for readers of an
// archive, before expand.
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "analysis/fold_images.hpp"

namespace trainsim::analysis {

// `Images` says how a record maps to its images: `count(record, images)`
// (1 or m) and `image(record, k, images)` (image k, 0 < k < count);
// `kUniform`: every record has m images.
template <class T, class Images>
class RecordList {
 public:
  using value_type = T;

  RecordList() = default;
  RecordList(std::initializer_list<T> records) : recorded_(records) {}
  RecordList& operator=(std::initializer_list<T> records) {
    recorded_ = records;
    images_.reset();
    offsets_.clear();
    return *this;
  }

  class const_iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;

    const_iterator() = default;
    const_iterator(const RecordList* list, std::size_t at) : list_(list), at_(at) { settle(); }

    T operator*() const {
      const T& r = list_->recorded_[at_];
      return image_ == 0 ? r : Images::image(r, image_, *list_->images_);
    }
    const_iterator& operator++() {
      if (++image_ >= count_) {
        image_ = 0;
        ++at_;
        settle();
      }
      return *this;
    }
    const_iterator operator++(int) {
      auto before = *this;
      ++*this;
      return before;
    }
    bool operator==(const const_iterator& o) const { return at_ == o.at_ && image_ == o.image_; }

   private:
    void settle() {
      count_ = 1;
      if (list_ != nullptr && list_->images_ && at_ < list_->recorded_.size())
        count_ = Images::count(list_->recorded_[at_], *list_->images_);
    }

    const RecordList* list_ = nullptr;
    std::size_t at_ = 0;
    int image_ = 0;
    int count_ = 1;
  };

  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, recorded_.size()}; }

  std::size_t size() const { return images_ ? size_ : recorded_.size(); }
  bool empty() const { return recorded_.empty(); }

  // Record i of the expanded list.
  T operator[](std::size_t i) const {
    if (!images_)
      return recorded_[i];
    const auto [at, k] = locate(i);
    return k == 0 ? recorded_[at] : Images::image(recorded_[at], static_cast<int>(k), *images_);
  }
  // The recorded record whose image record i is: the same times, bytes and
  // stream, without computing the image (analyses that need only those).
  const T& source(std::size_t i) const { return images_ ? recorded_[locate(i).first] : recorded_[i]; }
  T back() const { return (*this)[size() - 1]; }

  // Class by class, for readers that do once what a record's images share
  // (their times, bytes and stream): record r of recorded() stands for
  // images_of(r) records of the expanded list, r itself and image(r, k) for
  // 0 < k < images_of(r), in this order.
  int images_of(const T& r) const { return images_ ? Images::count(r, *images_) : 1; }
  T image(const T& r, int k) const { return k == 0 ? r : Images::image(r, k, *images_); }

  // The records as made, before expand (the replay, an archive's reader).
  std::vector<T>& recorded() {
    if (images_)
      throw std::logic_error("a folded timeline's records are read-only once expanded");
    return recorded_;
  }
  const std::vector<T>& recorded() const { return recorded_; }
  void push_back(const T& record) { recorded().push_back(record); }
  void reserve(std::size_t n) { recorded().reserve(n); }
  void clear() {
    recorded_.clear();
    images_.reset();
    offsets_.clear();
  }

  // From now on the list reads as the records and their images.
  void expand(std::shared_ptr<const FoldImages> images) {
    images_ = std::move(images);
    size_ = 0;
    offsets_.clear();
    if constexpr (Images::kUniform) {
      size_ = recorded_.size() * static_cast<std::size_t>(images_->order);
    } else {
      offsets_.reserve(recorded_.size());
      for (const auto& r : recorded_) {
        offsets_.push_back(size_);
        size_ += static_cast<std::size_t>(Images::count(r, *images_));
      }
    }
  }
  bool expanded() const { return images_ != nullptr; }
  // The images it reads through (null before expand): the analyses that
  // compute per class (analysis/fold_classes.hpp).
  const FoldImages* fold_images() const { return images_.get(); }
  // The same, shared: what a fact about the images holds on to (ImagesAlike).
  const std::shared_ptr<const FoldImages>& shared_fold_images() const { return images_; }

 private:
  // (recorded record, image) of record i, once expanded.
  std::pair<std::size_t, std::size_t> locate(std::size_t i) const {
    if constexpr (Images::kUniform) {
      const auto m = static_cast<std::size_t>(images_->order);
      return {i / m, i % m};
    } else {
      const auto at =
          static_cast<std::size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), i) - offsets_.begin()) -
          1;
      return {at, i - offsets_[at]};
    }
  }

  std::vector<T> recorded_;
  std::shared_ptr<const FoldImages> images_;
  std::size_t size_ = 0;
  std::vector<std::size_t> offsets_;  // non-uniform: each recorded record's first position
};

}  // namespace trainsim::analysis
