// Built torch extensions shared by the workspaces of one user (LATHE_EXTENSION_CACHE, docs/
// python-kernels.md "Extensions"). A workspace keeps its builds in CACHE/torch-ext/<key>, the key a
// hash of the extension's request (its sources, flags, torch and Python, the CUDA architecture):
// the same key is the same build wherever it was made, so a build made in one workspace (a test's,
// another run's) serves another instead of tens of seconds of compiling. Only builds whose status
// is `ok` are shared; every copy, in and out, is made beneath both folders without following a
// link, and holds only what the worker loads (the module files, their record) and the entry's
// status and log.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace lathe::gate {

// The folder LATHE_EXTENSION_CACHE names, made (0700) where missing; none when unset. A link, or a
// folder that is not this user's, is not used: none, and `why` says so.
std::optional<std::filesystem::path> shared_extension_cache(std::string* why = nullptr);

// ext_root/key made from shared/key when that entry is an `ok` build: true. False, nothing left
// in ext_root, when there is none; `note` says why when there was one that could not be used (a
// link in it, a module missing).
bool import_extension(const std::filesystem::path& shared, const std::filesystem::path& ext_root,
                      const std::string& key, std::string& note);

// shared/key made from ext_root/key (an `ok` build), unless it is there already; a failure leaves
// nothing behind and changes nothing for the evaluation.
void export_extension(const std::filesystem::path& ext_root, const std::filesystem::path& shared,
                      const std::string& key);

}  // namespace lathe::gate
