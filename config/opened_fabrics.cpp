#include "fastcm/opened_fabrics.h"

#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include "config/settings_loopback.h"
#include "fabric/pcap_tap/pcap_tap.h"
#include "fabric/roce_udp/udp_fabric.h"
#include "fabric/umad/umad_fabric.h"

namespace fastcm {

namespace {

class SettingsFabrics final : public OpenedFabrics {
 public:
  [[nodiscard]] std::size_t count() const noexcept override { return fabrics_.size(); }
  [[nodiscard]] Fabric* fabric(std::size_t index) noexcept override {
    return index < fabrics_.size() ? fabrics_[index] : nullptr;
  }
  [[nodiscard]] std::optional<CaptureCounters> capture_counters() const noexcept override {
    if (!tap_) return std::nullopt;
    return tap_->counters();
  }

  // Opens the transport; false with `error` set when it cannot be opened.
  bool open_transport(const FabricSettings& settings, const Clock& clock, std::string& error) {
    switch (settings.type) {
      case FabricType::loopback: return open_loopback(settings.loopback, clock, error);
      case FabricType::umad:
        device_ = umad::open_umad_fabric(umad::UmadConfig{settings.umad.device, settings.umad.ports}, error);
        break;
      case FabricType::udp:
        device_ = roce::open_udp_fabric(roce::UdpConfig{settings.udp.addresses, settings.udp.udp_port}, error);
        break;
    }
    if (device_) fabrics_.push_back(device_.get());
    return device_ != nullptr;
  }

  // Puts the capture in front of fabric 0; false with `error` set when the file cannot be written.
  bool capture(const PcapSettings& pcap, std::string& error) {
    try {
      tap_ = std::make_unique<pcap_tap::PcapTap>(
          *fabrics_.front(), pcap_tap::PcapTapConfig{.path = pcap.file, .max_bytes = pcap.limit_bytes});
    } catch (const std::invalid_argument& e) {
      error = "[pcap] " + pcap.file + ": " + e.what();
      return false;
    } catch (const std::system_error& e) {
      error = "[pcap] " + pcap.file + ": " + e.what();
      return false;
    }
    fabrics_.front() = tap_.get();
    return true;
  }

 private:
  bool open_loopback(const LoopbackSettings& s, const Clock& clock, std::string& error) {
    try {
      loopback_ = config::make_loopback(s, clock);
    } catch (const std::invalid_argument& e) {
      error = std::string("[loopback] ") + e.what();
      return false;
    } catch (const std::system_error& e) {
      error = std::string("loopback fabric: ") + e.what();
      return false;
    }
    for (std::size_t h = 0; h < loopback_->hca_count(); ++h) fabrics_.push_back(&loopback_->hca(h));
    return true;
  }

  std::unique_ptr<loopback::LoopbackFabric> loopback_;
  std::unique_ptr<Fabric> device_;
  std::vector<Fabric*> fabrics_;
  // Last: destroyed first, before the fabric it wraps.
  std::unique_ptr<pcap_tap::PcapTap> tap_;
};

}  // namespace

std::unique_ptr<OpenedFabrics> open_fabrics(const Settings& settings, const Clock& clock, std::string& error) {
  auto opened = std::make_unique<SettingsFabrics>();
  if (!opened->open_transport(settings.fabric, clock, error)) return nullptr;
  if (!settings.pcap.file.empty() && !opened->capture(settings.pcap, error)) return nullptr;
  return opened;
}

}  // namespace fastcm
