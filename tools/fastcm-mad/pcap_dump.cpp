#include "tools/fastcm-mad/pcap_dump.h"

#include <numeric>

#include "fabric/roce_udp/pcap_file.h"
#include "tools/fastcm-mad/gid_text.h"
#include "tools/fastcm-mad/mad_json.h"

namespace fastcm::tools {

PcapDumpCounts dump_pcap(const std::filesystem::path& path, std::ostream& out) {
  PcapDumpCounts counts;
  roce::PcapReader reader(path);
  while (const std::optional<roce::PcapRecord> record = reader.next()) {
    ++counts.frames;
    const roce::FrameParse parsed = roce::parse_rocev2_frame(record->frame);
    // bad_icrc still fills the frame: the MAD is shown with icrc_ok false, as a debugger wants.
    if (!parsed.ok() && parsed.errc != roce::FrameErrc::bad_icrc) {
      ++counts.refused[static_cast<std::size_t>(parsed.errc)];
      continue;
    }
    if (parsed.frame.header.dest_qp != roce::kGsiQpn) {
      ++counts.not_gsi;
      continue;
    }
    ++counts.mads;
    const bool icrc_ok = parsed.ok();
    if (!icrc_ok) ++counts.bad_icrc;
    const MadAsJson mad = mad_to_json(parsed.frame.mad);
    if (!mad.ok) ++counts.bad_mads;

    Json line = Json::object();
    line["frame"] = counts.frames;
    line["time_us"] = record->timestamp.count();
    line["src"] = gid_to_text(parsed.frame.src.gid);
    line["dst"] = gid_to_text(parsed.frame.dst.gid);
    line["icrc_ok"] = icrc_ok;
    for (const auto& item : mad.json.items()) line[item.key()] = item.value();
    out << line.dump() << '\n';
  }
  return counts;
}

std::string summary_line(const PcapDumpCounts& c) {
  const std::uint64_t skipped =
      std::accumulate(c.refused.begin(), c.refused.end(), std::uint64_t{0});
  std::string s = std::to_string(c.frames) + " frames: " + std::to_string(c.mads) + " MADs (" +
                  std::to_string(c.bad_mads) + " malformed, " + std::to_string(c.bad_icrc) +
                  " bad ICRC), " + std::to_string(c.not_gsi) + " to other QPs, " +
                  std::to_string(skipped) + " skipped";
  if (skipped == 0) return s;
  std::string reasons;
  for (std::size_t i = 0; i < c.refused.size(); ++i) {
    if (c.refused[i] == 0) continue;
    if (!reasons.empty()) reasons += ", ";
    reasons.append(roce::to_string(static_cast<roce::FrameErrc>(i)))
        .append(": ")
        .append(std::to_string(c.refused[i]));
  }
  return s + " (" + reasons + ")";
}

}  // namespace fastcm::tools
