// lathe skills list | show | admit | from-tune | export | import: the library (DESIGN.md "skill
// card"; docs/skills.md). list/show read the store; admit tries candidate cards on held-out tasks
// through the gate; from-tune makes a stored tune run's card (cli/tune_card.h); export writes a
// lathe.library/1 JSON document or Agent Skills folders; import reads either that document or the
// KLineage reference implementation's saved lineages and SKILL.md cards.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/context.h"
#include "cli/fail.h"
#include "cli/lineage_view.h"
#include "cli/skills_admit.h"
#include "cli/tune_card.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "core/json_card.h"
#include "core/text.h"
#include "report/html.h"
#include "report/model.h"
#include "skills/interchange.h"
#include "skills/klineage_import.h"
#include "skills/render.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

struct skills_options {
  std::string op, status, card, output, input, skill_md_dir;
  std::vector<std::string> cards, lineages;
  bool json = false, replace = false, html = false, all_cards = false;
};

result<context> open_plain(const common_options& common) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  return open_context(ws, false);
}

int run_list(const common_options& common, const skills_options& o) {
  auto ctx = open_plain(common);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto cards = ctx->db->list_cards(o.op);
  if (!cards) return fail_with(cards.error(), 1);
  std::vector<skill_card> shown;
  for (auto& c : *cards)
    if (o.status.empty() || o.status == to_string(c.status)) shown.push_back(std::move(c));
  if (o.json) {
    json j{{"schema", "lathe.skills_list/1"}, {"cards", shown}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (shown.empty()) {
    std::printf("no cards%s in %s (`lathe decompose TASK` induces them)\n",
                o.op.empty() && o.status.empty() ? "" : " matching", ctx->ws.db().c_str());
    return 0;
  }
  std::printf("%-40s  %-15s  %-10s  %-22s  %-8s  %-6s  %s\n", "card", "status", "operator", "provides",
              "declared", "trials", "provenance");
  for (const auto& c : shown)
    std::printf("%-40s  %-15s  %-10s  %-22s  %-8s  %-6zu  %s\n", c.name.c_str(), to_string(c.status),
                c.op.c_str(), join(c.provides_features, ",").c_str(), ratio_text(c.declared_ratio).c_str(),
                c.trials.size(), to_string(c.prov).c_str());
  return 0;
}

int run_show(const common_options& common, const skills_options& o) {
  auto ctx = open_plain(common);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto c = ctx->db->get_card(o.card);
  if (!c) return fail_with(c.error(), 1);
  if (!*c) {
    std::fprintf(stderr, "lathe: no card '%s' (`lathe skills list` names them)\n", o.card.c_str());
    return 2;
  }
  if (o.html) {
    // The card with its lineage evidence and verification log as one page (lathe.card_report/1).
    auto model = report::card_report(*ctx->db, o.card);
    if (!model) return fail_with(model.error(), 1);
    const std::string page = report::render_html(*model);
    if (o.output.empty()) {
      std::fwrite(page.data(), 1, page.size(), stdout);
      return 0;
    }
    std::ofstream out(o.output, std::ios::binary | std::ios::trunc);
    out << page;
    out.close();
    if (!out) {
      std::fprintf(stderr, "lathe: cannot write %s\n", o.output.c_str());
      return 1;
    }
    std::printf("wrote     %s: card %s, %zu lineage source(s), %zu evaluation(s)\n", o.output.c_str(),
                (**c).name.c_str(), (*model)["lineage_evidence"].size(), (*model)["evaluations"].size());
    return 0;
  }
  if (!o.output.empty()) {
    std::fprintf(stderr, "lathe: -o is for --html (the page); --json prints to stdout\n");
    return 2;
  }
  if (o.json) {
    json j{{"schema", "lathe.skill/1"}, {"card", **c}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_card(**c);
  }
  return 0;
}

int run_export(const common_options& common, const skills_options& o) {
  if (o.output.empty() && o.skill_md_dir.empty()) {
    std::fprintf(stderr, "lathe: export needs -o FILE.json and/or --skill-md DIR\n");
    return 2;
  }
  auto ctx = open_plain(common);
  if (!ctx) return fail_with(ctx.error(), 2);
  skills::export_request r;
  r.cards = o.cards;
  r.lineages = o.lineages;
  r.source = ctx->ws.root.string();
  auto doc = skills::export_library(*ctx->db, r);
  if (!doc) return fail_with(doc.error(), 1);
  if (!o.output.empty()) {
    std::ofstream out(o.output, std::ios::binary | std::ios::trunc);
    out << skills::library_text(*doc) << "\n";
    if (!out) {
      std::fprintf(stderr, "lathe: cannot write %s\n", o.output.c_str());
      return 1;
    }
    std::printf("wrote     %s: %zu lineage(s), %zu card(s), %zu kernel(s) (schema %s)\n", o.output.c_str(),
                doc->lineages.size(), doc->cards.size(), doc->kernels.size(), skills::library_schema);
    if (!doc->missing_kernels.empty())
      std::printf("missing   %zu kernel(s) named but not in this store\n", doc->missing_kernels.size());
  }
  int code = 0;
  if (!o.skill_md_dir.empty()) {
    // What a coding agent will follow: the admitted cards, unless cards were named or --all-cards.
    std::vector<skill_card> chosen;
    std::map<std::string, size_t> left;
    for (const auto& c : doc->cards) {
      if (o.all_cards || !o.cards.empty() || c.status == card_status::admitted ||
          c.status == card_status::replay_admitted)
        chosen.push_back(c);
      else
        ++left[to_string(c.status)];
    }
    if (!left.empty()) {
      std::vector<std::string> counts;
      for (const auto& [status, n] : left) counts.push_back(std::to_string(n) + " " + status);
      std::printf("left out %s card(s) not admitted (%s); --all-cards exports them too\n",
                  std::to_string(doc->cards.size() - chosen.size()).c_str(), join(counts, ", ").c_str());
    }
    auto written = skills::write_skill_folders(chosen, o.skill_md_dir);
    if (!written) return fail_with(written.error(), 1);
    size_t ok = 0;
    for (const auto& w : *written) {
      if (w.written && w.problems.empty()) {
        ++ok;
        continue;
      }
      code = 1;
      std::printf("skipped   %s: %s\n", w.card_name.c_str(), join(w.problems, "; ").c_str());
    }
    std::printf("wrote     %zu Agent Skills folder(s) (SKILL.md) under %s\n", ok, o.skill_md_dir.c_str());
  }
  return code;
}

result<skills::import_report> import_any(store& db, const fs::path& in, const skills::import_options& io) {
  std::error_code ec;
  if (fs::is_regular_file(in, ec) && in.extension() == ".json") {
    std::ifstream f(in, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    // A lathe.library document, else a KLineage saved lineage or card.
    if (text.find(skills::library_schema) != std::string::npos) {
      auto doc = skills::parse_library(text);
      if (!doc) return tl::unexpected(doc.error());
      auto rep = skills::import_library(db, *doc, io);
      if (rep) rep->source = in.string();
      return rep;
    }
  }
  return skills::import_klineage(db, in, io);
}

int run_import(const common_options& common, const skills_options& o) {
  auto ctx = open_plain(common);
  if (!ctx) return fail_with(ctx.error(), 2);
  skills::import_options io;
  io.replace_changed = o.replace;
  auto rep = import_any(*ctx->db, o.input, io);
  if (!rep) return fail_with(rep.error(), 1);
  if (o.json) {
    json j = *rep;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("imported  %s (%s)\n", rep->source.c_str(), rep->format.c_str());
    for (const auto& e : rep->entries) {
      std::printf("  %-8s %-15s %s%s%s\n", e.kind.c_str(), skills::to_string(e.action),
                  (e.name.empty() ? e.id : e.name).c_str(), e.reason.empty() ? "" : ": ", e.reason.c_str());
      if (!e.unmapped.empty()) std::printf("           unmapped: %s\n", join(e.unmapped, "; ").c_str());
    }
  }
  return rep->has(skills::import_action::refused) || rep->has(skills::import_action::name_clash) ? 1 : 0;
}

}  // namespace

void add_skills(CLI::App& app, const common_options& common, int& exit_code) {
  CLI::App* sub = app.add_subcommand("skills", "the skill library: list, show, admit, from-tune, export, import");
  sub->require_subcommand(1);
  auto o = std::make_shared<skills_options>();

  CLI::App* list = sub->add_subcommand("list", "the cards, with status, contract and declared effect");
  list->add_option("--operator", o->op, "only cards induced from this operator");
  list->add_option("--status", o->status, "only cards with this status (candidate, admitted, replay-admitted, refused)");
  list->add_flag("--json", o->json, "print as JSON (schema lathe.skills_list/1)");
  list->callback([o, &common, &exit_code] { exit_code = run_list(common, *o); });

  CLI::App* show = sub->add_subcommand("show", "one card: every field, its carriers, evidence and trials");
  show->add_option("card", o->card, "the card's name or id")->required();
  show->add_flag("--json", o->json, "print as JSON (schema lathe.skill/1)");
  show->add_flag("--html", o->html, "the card as one self-contained HTML page: its lineage evidence and verification log "
                 "(to stdout, or -o)");
  show->add_option("-o,--output", o->output, "with --html: write the page here");
  show->callback([o, &common, &exit_code] { exit_code = run_show(common, *o); });

  add_skills_admit(sub, common, exit_code);
  add_skills_from_tune(sub, common, exit_code);

  CLI::App* exp = sub->add_subcommand("export", "write lineages and cards as lathe.library/1 JSON and/or Agent Skills SKILL.md folders");
  exp->add_option("-o,--output", o->output, "the JSON document to write");
  exp->add_option("--skill-md", o->skill_md_dir,
                  "write one SKILL.md folder per admitted card under this directory (named --card ones whatever "
                  "their status)");
  exp->add_flag("--all-cards", o->all_cards, "with --skill-md: also the candidate and refused cards");
  exp->add_option("--card", o->cards, "only this card (repeatable; default: all)");
  exp->add_option("--lineage", o->lineages, "only this lineage (repeatable; default: all)");
  exp->callback([o, &common, &exit_code] { exit_code = run_export(common, *o); });

  CLI::App* imp = sub->add_subcommand("import", "read a lathe.library/1 document, or KLineage saved lineages / SKILL.md cards");
  imp->add_option("input", o->input, "a .json document, a SKILL.md, or a folder of them")->required();
  imp->add_flag("--replace", o->replace, "replace lineages and cards present with other content");
  imp->add_flag("--json", o->json, "print the import report as JSON (schema lathe.import/1)");
  imp->footer("Imported cards keep their recorded status but are not admitted here until `lathe skills admit` tries them.\n"
              "Exit code 1 when an entry was refused or a card name clashed.");
  imp->callback([o, &common, &exit_code] { exit_code = run_import(common, *o); });
}

}  // namespace lathe::cli
