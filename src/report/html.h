// The report as one self-contained HTML page: the model (report/model.h) embedded as JSON, drawn
// by an inline script into HTML and SVG. Nothing is loaded from anywhere (a Content-Security-
// Policy of default-src 'none' says so to the browser), no third-party code. Every string of the
// model reaches the page only as text (textContent, never markup), so kernel sources and model
// replies cannot inject markup or script.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace lathe::report {

// The page for a lathe.report/1 or lathe.card_report/1 document.
std::string render_html(const nlohmann::json& model);

// `& < > " '` as character references: for text put into markup by this file.
std::string escape_html(std::string_view text);

// The model as JSON that is safe inside <script type="application/json">: `<`, `>` and `&` as
// \u escapes (so no `</script>` or `<!--` can end the element), invalid UTF-8 replaced.
std::string script_safe_json(const nlohmann::json& model);

// The model as JSON text for `--json` (indented, invalid UTF-8 replaced rather than thrown on).
std::string json_text(const nlohmann::json& model);

// The page's parts (page_style.cpp, page_script.cpp).
extern const char* const page_style;
extern const char* const page_error_hook;
extern const char* const page_script;

}  // namespace lathe::report
