// platforms::ReallocArray: what std::vector gave the task graph (elements
// kept through growth, capacities doubling from 1, exact on reserve and on
// copy, storage kept by a move), grown by realloc.
#include "platforms/realloc_array.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <utility>
#include <vector>

namespace trainsim::platforms {
namespace {

struct Wide {
  double a = 0;
  int b = -1;
  char c[83] = {};
};

TEST(ReallocArray, KeepsItsElementsThroughGrowthWithStdVectorsCapacities) {
  ReallocArray<Wide> array;
  std::vector<Wide> reference;
  for (int k = 0; k < 3000; ++k) {
    Wide w;
    w.a = k * 0.5;
    w.b = k;
    w.c[k % 83] = static_cast<char>(k);
    array.push_back(w);
    reference.push_back(w);
    ASSERT_EQ(array.capacity(), reference.capacity()) << k;
  }
  ASSERT_EQ(array.size(), reference.size());
  for (std::size_t k = 0; k < reference.size(); ++k) {
    EXPECT_EQ(array[k].a, reference[k].a);
    EXPECT_EQ(array[k].b, reference[k].b);
    EXPECT_EQ(array[k].c[k % 83], reference[k].c[k % 83]);
  }
}

TEST(ReallocArray, AppendsOneOfItsOwnElementsWhenItMustGrow) {
  ReallocArray<Wide> array;
  array.push_back({.a = 1, .b = 7});
  for (int k = 0; k < 12; ++k) {
    while (array.size() < array.capacity())
      array.push_back(array[array.size() - 1]);
    // Full: this append moves the array away from the element it copies.
    const Wide& copied = array.push_back(array[array.size() - 1]);
    EXPECT_EQ(copied.b, 7);
  }
  EXPECT_EQ(array.size(), 2049u);
  for (const Wide& w : array)
    EXPECT_EQ(w.b, 7);
}

TEST(ReallocArray, ReservesAndCopiesExactlyAndMovesItsStorage) {
  ReallocArray<int> array;
  array.reserve(1000);
  EXPECT_EQ(array.capacity(), 1000u);
  for (int k = 0; k < 10; ++k)
    array.push_back(k);
  const ReallocArray<int> copy = array;
  EXPECT_EQ(copy.size(), 10u);
  EXPECT_EQ(copy.capacity(), 10u);
  EXPECT_EQ(copy[9], 9);
  const int* storage = &array[0];
  ReallocArray<int> moved = std::move(array);
  EXPECT_EQ(&moved[0], storage);
  EXPECT_TRUE(array.empty());  // NOLINT(bugprone-use-after-move): a moved-from array is empty
  moved.clear_and_free();
  EXPECT_EQ(moved.capacity(), 0u);
}

}  // namespace
}  // namespace trainsim::platforms
