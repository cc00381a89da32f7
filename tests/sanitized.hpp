// Whether this test binary runs under AddressSanitizer or ThreadSanitizer, whose shadow
// memory counts against the memory limits some tests set. GCC defines __SANITIZE_*__;
// clang (before 16) answers through __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VKF_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define VKF_UNDER_SANITIZER 1
#endif
#endif
