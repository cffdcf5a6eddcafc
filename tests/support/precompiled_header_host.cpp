// The translation unit that builds the tests' shared precompiled header
// (tests/CMakeLists.txt, TRAINSIM_TEST_PCH): CMake compiles the header list
// of `target_precompile_headers` on behalf of this file's target, and every
// test executable reuses the result. It holds no code of its own.
