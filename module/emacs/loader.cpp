// sly-agent-q-module.so, the file Emacs loads: it loads the real module,
// sly-agent-q-core.so from the same directory, with every symbol bound at
// once (RTLD_NOW), and hands over to it.
//
// Why not load the real module directly: Emacs opens modules lazily bound,
// and then so are their new dependencies, libecl among them.  ECL's boot
// then resolved thousands of libecl's calls into itself one at a time
// through the dynamic linker: 4-6 ms of a ~45 ms boot.  Bound at load they
// cost well under a millisecond.  (A library's binding mode is fixed when
// it is first loaded, so the real module cannot do this for itself.)

#include <dlfcn.h>
#include <emacs-module.h>

#include <cstdlib>
#include <string>

extern "C" {
int plugin_is_GPL_compatible;
}

namespace {

constexpr const char* kCoreFile = "sly-agent-q-core.so";
constexpr const char* kCoreInit = "sly_agent_q_core_init";

// Leaves `error' pending with MESSAGE: Emacs signals it when init returns 0,
// and the Elisp side turns it into a user-error that says to run make.
void signal_error(emacs_env* env, const std::string& message) {
  emacs_value text = env->make_string(env, message.data(), static_cast<ptrdiff_t>(message.size()));
  emacs_value data = env->funcall(env, env->intern(env, "list"), 1, &text);
  env->non_local_exit_signal(env, env->intern(env, "error"), data);
}

// The core beside this file, following symbolic links to it: a link to
// the loader elsewhere still finds the build's core.
std::string core_path() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&signal_error), &self) == 0 || self.dli_fname == nullptr) return kCoreFile;
  std::string path = self.dli_fname;
  if (char* real = realpath(self.dli_fname, nullptr)) {
    path = real;
    std::free(real);
  }
  std::string::size_type slash = path.rfind('/');
  return (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + kCoreFile;
}

}  // namespace

extern "C" int emacs_module_init(struct emacs_runtime* runtime) noexcept {
  if (runtime->size < static_cast<ptrdiff_t>(sizeof(*runtime))) return 1;
  emacs_env* env = runtime->get_environment(runtime);
  try {
    std::string path = core_path();
    // Local, like Emacs's own dlopen of modules: nothing of ours or of
    // libecl enters the global scope that later modules link against.
    void* core = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (core == nullptr) {
      const char* reason = dlerror();
      signal_error(env, reason ? reason : "cannot load " + path);
      return 0;
    }
    auto init = reinterpret_cast<int (*)(struct emacs_runtime*)>(dlsym(core, kCoreInit));
    if (init == nullptr) {
      signal_error(env, path + " has no " + kCoreInit + " (a stale build?)");
      return 0;
    }
    return init(runtime);
  } catch (...) {
    return 6;
  }
}
