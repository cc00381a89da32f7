#pragma once
#include "vkformer/buffer.hpp"
#include "vkformer/capabilities.hpp"
#include "vkformer/command_list.hpp"
#include "vkformer/context.hpp"
#include "vkformer/error.hpp"
#include "vkformer/kernel.hpp"
#include "vkformer/self_test.hpp"
