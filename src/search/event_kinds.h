// The kinds of an optimize or evolve run's events (store: run_events.kind; journal.h lists their
// bodies), spelled once: the run loop writes them and `lathe export training` reads them back.
// Stored runs hold these words, so they never change (lineage/run_log.h spells decompose's).
#pragma once

namespace lathe::search::event_kind {
inline constexpr const char* started = "started";
inline constexpr const char* resumed = "resumed";
inline constexpr const char* start = "start";
inline constexpr const char* finished = "finished";
// optimize
inline constexpr const char* ranking = "ranking";
inline constexpr const char* proposal = "proposal";
inline constexpr const char* evaluation = "evaluation";
inline constexpr const char* accepted = "accepted";
inline constexpr const char* rejected = "rejected";
// evolve
inline constexpr const char* generation = "generation";
inline constexpr const char* child = "child";
}  // namespace lathe::search::event_kind
