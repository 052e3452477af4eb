// ki key generate NAME [--no-passphrase] | ki key list [--json] | ki key export NAME
#include <iostream>

#include "command.h"
#include "ki/sign.h"

namespace ki::cli {
namespace {

std::string_view ProtectionName(KeyProtection p) { return p == KeyProtection::kNone ? "none" : "passphrase"; }

RunFn SetupKey(CLI::App* sub, GlobalOptions*) {
  sub->require_subcommand(1);
  auto name = std::make_shared<std::string>();
  auto no_pass = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  CLI::App* gen = sub->add_subcommand("generate", "Make an Ed25519 key pair (secret key file mode 0600)");
  gen->add_option("name", *name, "the key's local name")->required();
  gen->add_flag("--no-passphrase", *no_pass, "store the secret key unencrypted (for unattended runners)");
  CLI::App* list = sub->add_subcommand("list", "List local keys");
  list->add_flag("--json", *json, "print as JSON");
  gen->add_flag("--json", *json, "print {name, keyid, publicKey, protection, path} as JSON");
  CLI::App* exp = sub->add_subcommand("export", "Print a key's public key, one line, for others to trust");
  exp->add_option("name", *name, "the key's local name")->required();
  exp->add_flag("--json", *json, "print {name, keyid, publicKey} as JSON");

  return [=]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(Keyring ring, Keyring::Default());
    if (gen->parsed() || list->parsed()) {
      // A generate killed before it linked its key left a temporary (for
      // --no-passphrase, the secret in clear): remove it and say so.
      KI_ASSIGN_OR_RETURN(auto stale, ring.RemoveStaleTemporaries());
      for (const auto& path : stale)
        std::cerr << "ki: note: removed " << path << ", left by a ki key generate that did not finish\n";
    }
    if (gen->parsed()) {
      KI_ASSIGN_OR_RETURN(KeyInfo info, ring.Generate(*name, *no_pass ? KeyProtection::kNone : KeyProtection::kPassphrase,
                                                      DefaultPassphrase));
      if (*json) {
        PrintJson({{"name", info.name}, {"keyid", info.key.KeyId()}, {"publicKey", info.key.ToString()},
                   {"protection", std::string(ProtectionName(info.protection))}, {"path", info.path}});
        return 0;
      }
      std::cout << "key " << info.name << "\t" << info.key.ToString() << "\n"
                << "keyid\t" << info.key.KeyId() << "\n"
                << "secret key file\t" << info.path << " (mode 0600, "
                << (info.protection == KeyProtection::kNone ? "not encrypted" : "passphrase-protected") << ")\n";
      return 0;
    }
    if (list->parsed()) {
      KI_ASSIGN_OR_RETURN(auto keys, ring.List());
      if (*json) {
        Json arr = Json::array();
        for (const auto& k : keys)
          arr.push_back({{"name", k.name}, {"keyid", k.key.KeyId()}, {"publicKey", k.key.ToString()},
                         {"protection", std::string(ProtectionName(k.protection))}, {"path", k.path}});
        PrintJson(arr);
      } else {
        for (const auto& k : keys)
          std::cout << k.name << "\t" << k.key.KeyId() << "\t" << ProtectionName(k.protection) << "\t"
                    << k.key.ToString() << "\n";
      }
      return 0;
    }
    KI_ASSIGN_OR_RETURN(KeyInfo info, ring.Info(*name));
    if (*json) PrintJson({{"name", info.name}, {"keyid", info.key.KeyId()}, {"publicKey", info.key.ToString()}});
    else std::cout << info.key.ToString() << "\n";
    return 0;
  };
}

KI_REGISTER_COMMAND(key, {"key", "Manage local signing keys (generate, list, export)", SetupKey, 70});

}  // namespace
}  // namespace ki::cli
