#include "report/html.h"

#include <nlohmann/json.hpp>

namespace lathe::report {

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string script_safe_json(const nlohmann::json& model) {
  const std::string text = model.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  // Outside strings JSON has none of these characters, so escaping every one keeps it valid JSON.
  for (char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string json_text(const nlohmann::json& model) {
  return model.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string render_html(const nlohmann::json& model) {
  std::string title = "lathe report";
  if (model.value("kind", "") == "card" && model.contains("card"))
    title += ": skill card " + model["card"].value("name", std::string());
  else if (model.contains("run"))
    title += ": " + model["run"].value("kind", std::string()) + " run " + model["run"].value("id", std::string());
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // Nothing may be fetched: inline style and script only, images only as data: URIs.
  page += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
          "script-src 'unsafe-inline'; img-src data:\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<meta name=\"generator\" content=\"lathe report (" + escape_html(model.value("schema", std::string())) + ")\">\n";
  page += "<title>" + escape_html(title) + "</title>\n<style>\n";
  page += page_style;
  page += "</style>\n</head>\n<body>\n";
  // Script errors land here (the tests read it from the rendered DOM); hidden while empty.
  page += "<div id=\"lathe-errors\" data-count=\"0\" hidden></div>\n<script>\n";
  page += page_error_hook;
  page += "</script>\n";
  page += "<noscript><p>This report is drawn by its inline script. The same data is in the JSON document "
          "embedded below (and printed by <code>lathe report RUN --json</code>).</p></noscript>\n";
  page += "<main id=\"report\"></main>\n";
  page += "<script type=\"application/json\" id=\"lathe-report-data\">" + script_safe_json(model) + "</script>\n<script>\n";
  page += page_script;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace lathe::report
