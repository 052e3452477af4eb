// ki trust add PUBKEY --name N [--role runner|reviewer] | ki trust list [--json] | ki trust remove WHO
#include <iostream>

#include "command.h"
#include "ki/sign.h"

namespace ki::cli {
namespace {

// PUBKEY is the `ed25519:...` text itself, `-` for a line on stdin, or a
// file holding that line (what `ki key export NAME > FILE` writes).
Result<PublicKey> ReadPublicKeyArg(const std::string& arg) {
  // The CLI is the process: its own files go through the process's Env.
  std::string text = arg;
  if (arg == "-") {
    std::getline(std::cin, text);
  } else if (arg.rfind("ed25519:", 0) != 0 && Env::Default()->Exists(arg)) {
    KI_ASSIGN_OR_RETURN(text, Env::Default()->ReadFile(arg, 64 << 10));
    text = text.substr(0, text.find('\n'));
  }
  return PublicKey::Parse(text);
}

Json TrustEntryJson(const TrustEntry& e, bool revoked) {
  return {{"name", e.name},
          {"keyid", e.keyid},
          {"publicKey", e.key.ToString()},
          {"role", std::string(RoleName(e.role))},
          {revoked ? "removedAt" : "addedAt", e.when}};
}

RunFn SetupTrust(CLI::App* sub, GlobalOptions*) {
  sub->require_subcommand(1);
  auto key = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  auto role = std::make_shared<std::string>("reviewer");
  auto json = std::make_shared<bool>(false);
  CLI::App* add = sub->add_subcommand("add", "Trust a public key");
  add->add_option("pubkey", *key, "ed25519:<base64>, a file holding it, or - for stdin")->required();
  add->add_option("--name", *name, "a name for the key's owner")->required();
  add->add_option("--role", *role, "runner (re-runs count toward verified) or reviewer (default)")
      ->check(CLI::IsMember({"runner", "reviewer"}));
  add->add_flag("--json", *json, "print {action, name, keyid, role} as JSON");
  CLI::App* list = sub->add_subcommand("list", "List trusted and revoked keys");
  list->add_flag("--json", *json, "print as JSON");
  CLI::App* rm = sub->add_subcommand("remove", "Stop trusting a key (its signatures then count as revoked)");
  rm->add_option("who", *name, "the trust name, or the key id (at least 8 hex digits)")->required();
  rm->add_flag("--json", *json, "print {action, name, keyid, removedAt} as JSON");

  return [=]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(std::string home, KiHome());
    // add and remove read, change and write the list: under its lock, so
    // two at once do not lose one's change.
    const std::string path = TrustStore::DefaultPath(home);
    KI_ASSIGN_OR_RETURN(TrustStore trust, add->parsed() || rm->parsed() ? TrustStore::LoadForUpdate(path)
                                                                         : TrustStore::Load(path));
    if (add->parsed()) {
      KI_ASSIGN_OR_RETURN(PublicKey pk, ReadPublicKeyArg(*key));
      KI_ASSIGN_OR_RETURN(bool added, trust.Add(pk, *name, *ParseRole(*role)));
      KI_RETURN_IF_ERROR(trust.Save());
      if (*json)
        PrintJson({{"action", added ? "trusted" : "updated"}, {"name", *name}, {"keyid", pk.KeyId()}, {"role", *role}});
      else
        std::cout << (added ? "trusted " : "updated ") << *name << "\t" << pk.KeyId() << "\t" << *role << "\n";
      return 0;
    }
    if (rm->parsed()) {
      auto removed = trust.Remove(*name);
      if (!removed.ok() && removed.status().IsNotFound()) {
        // Already revoked: a remove run again, typically after one whose
        // directory fsync failed (exit 5) though its new list was in place.
        // That is the state asked for, so exit 0, saying so; saving again
        // makes the list durable.
        auto revoked = trust.RevokedMatching(*name);
        if (revoked.size() == 1) {
          KI_RETURN_IF_ERROR(trust.Save());
          const TrustEntry& e = *revoked.front();
          if (*json)
            PrintJson({{"action", "already removed"}, {"name", e.name}, {"keyid", e.keyid}, {"removedAt", e.when}});
          else
            std::cout << "already removed " << e.name << "\t" << e.keyid << "\t(revoked at " << e.when << ")\n";
          return 0;
        }
      }
      KI_ASSIGN_OR_RETURN(TrustEntry e, std::move(removed));
      KI_RETURN_IF_ERROR(trust.Save());
      if (*json)
        PrintJson({{"action", "removed"}, {"name", e.name}, {"keyid", e.keyid}, {"removedAt", e.when}});
      else
        std::cout << "removed " << e.name << "\t" << e.keyid << "\t(its signatures now count as revoked)\n";
      return 0;
    }
    if (*json) {
      Json keys = Json::array(), revoked = Json::array();
      for (const auto& e : trust.trusted()) keys.push_back(TrustEntryJson(e, false));
      for (const auto& e : trust.revoked()) revoked.push_back(TrustEntryJson(e, true));
      PrintJson({{"path", trust.path()}, {"trusted", keys}, {"revoked", revoked}});
    } else {
      for (const auto& e : trust.trusted())
        std::cout << e.name << "\t" << RoleName(e.role) << "\t" << e.keyid << "\t" << e.when << "\n";
      for (const auto& e : trust.revoked())
        std::cout << e.name << "\trevoked\t" << e.keyid << "\t" << e.when << "\n";
    }
    return 0;
  };
}

KI_REGISTER_COMMAND(trust, {"trust", "Decide whose signatures count (add, list, remove)", SetupTrust, 71});

}  // namespace
}  // namespace ki::cli
