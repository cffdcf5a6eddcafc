#pragma once
// The SimGrid network of a cluster, as one netzone that computes routes on the
// fly instead of storing an n x n route table (a full zone of 4,096 GPUs takes
// 13 s and 2 GB to build; this one takes milliseconds). Every link is
// split-duplex: UP carries traffic leaving the endpoint that owns the link,
// DOWN traffic arriving at it, so each direction has its own capacity. A
// route's latency is computed per route (see below), not summed from links.
//
// Inside a node (one builder per node shape):
//
//   nvswitch                      cube_mesh (DGX-1, 8 GPUs)          pcie
//   GPU0 GPU1 ... GPU7            GPU0 ==== GPU3 ---- GPU7 ...      GPU0 GPU1 ... GPU7
//     |    |       |                |  \  /  |  lanes: 1 or 2         |    |       |
//   gpuN-nvlink (per GPU port)      |   \/   |  per pair (6 per GPU) gpuN-pcie (per GPU)
//   [ NVSwitch: non-blocking ]      GPU1 ==== GPU2 ...               [ PCIe switches ]
//     + node switch host when     pairs without NVLink: over PCIe
//       NVLS (in-switch reduction)
//
//   full_mesh (AMD MI300X, 8 GPUs): GPU0 --- GPU1 --- ...   every pair on a link of its own
//                                     \______/   (nodeN-meshA-B, nvlink.bandwidth / (g - 1))
//
//   same node:   nvswitch: nvlink(a).up, nvlink(b).down       latency nvlink.latency
//                cube_mesh: lane link(a,b) or pcie(a).up, pcie(b).down
//                full_mesh: mesh link(a,b)                    latency nvlink.latency
//                pcie:      pcie(a).up, pcie(b).down          latency pcie.latency
//
// An NVLink domain (cluster.nvlink_domain) joins several nvswitch nodes into
// one NVSwitch fabric: two GPUs of one domain talk over their NVLink ports
// whichever node (compute tray) holds them, and the domain's NVLS switch
// serves all its GPUs:
//
//   GB200 NVL72: 18 trays x 4 GPUs      tray 0: GPU0..3  tray 1: GPU4..7 ... tray 17
//                                          |||| NICs        |||| NICs
//                                        gpuN-nvlink (per GPU port, NVLink 5)
//                                        [ NVLink Switch trays: non-blocking, NVLS ]
//
//   same domain:  nvlink(a).up, nvlink(b).down                 latency nvlink.latency
//
// Between domains, GPU -> [PCIe] -> NIC -> fabric -> NIC -> [PCIe] -> GPU, with
// latency nic.latency (through one switch) plus the fabric's extra hops.
// PCIe joins the route when it can matter: on nodes without NVSwitch (it
// also carries GPU-to-GPU traffic there) or when it is slower than the NIC.
// NICs shared by several GPUs (nic.per_node < gpus_per_node) share capacity.
//
// The fabric's links and routes between NICs come from
// platforms/fabric_layout.hpp (one file per topology in platforms/fabrics/,
// each with its diagram).
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "platforms/cluster_spec.hpp"
#include "platforms/fabric_layout.hpp"

namespace trainsim::sim {

class ClusterZone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  // Creates one host per GPU (speed: its bf16 peak), one per NVLS switch, and
  // every link, then seals the zone. Must be the first netzone of the process
  // (the root). The spec must outlive the zone.
  // `speed_factors[gpu]`, when given, adds pstates to that GPU's host at
  // those fractions of its peak (pstate 0 stays the peak): slowed GPUs run at
  // another pstate (sim/perturbations/driver.hpp).
  explicit ClusterZone(const platforms::ClusterSpec& spec,
                       std::vector<std::vector<double>> speed_factors = {});

  const platforms::ClusterSpec& spec() const { return spec_; }
  int gpu_count() const { return static_cast<int>(gpu_.size()); }
  simgrid::s4u::Host* host(int gpu) const { return gpu_[static_cast<std::size_t>(gpu)].host; }
  // Flow endpoints: GPU ranks 0..gpu_count()-1, then one per NVLink domain
  // standing for its NVSwitch (endpoint gpu_count() + domain), used by
  // in-switch reductions.
  simgrid::s4u::Host* endpoint_host(int endpoint) const;
  int switch_endpoint(int domain) const { return gpu_count() + domain; }
  bool has_nvls(int domain) const;

  int node_of(int gpu) const { return gpu_[static_cast<std::size_t>(gpu)].node; }
  // The NVLink domain of a GPU: its node's, unless cluster.nvlink_domain
  // joins several nodes into one.
  int domain_of(int gpu) const { return node_[static_cast<std::size_t>(node_of(gpu))].domain; }
  int local_rank(int gpu) const { return gpu_[static_cast<std::size_t>(gpu)].local_rank; }
  // The NIC a GPU's traffic leaves through, as an index within its node.
  int nic_index(int gpu) const { return gpu_[static_cast<std::size_t>(gpu)].nic_index; }
  const platforms::NodeGroup& group_of_node(int node) const;
  // NVLink lanes between two GPUs of one cube-mesh node (0 elsewhere).
  int nvlink_lanes(int gpu_a, int gpu_b) const;

  // What one uncontended transfer between two endpoints sees.
  struct Path {
    double latency_s = 0;
    double bandwidth_Bps = 0;  // the narrowest link (after efficiency)
    int links = 0;
  };
  Path path(int src, int dst) const;
  // path(src, dst).latency_s without reading the route's links (the
  // expansions' latency terms ask it of every edge and ring hop).
  double latency_s(int src, int dst) const;
  // Link names along the route, in order, with ":up" or ":down" (tests, docs).
  std::vector<std::string> route_names(int src, int dst) const;
  // Calls visit on every link direction of the route (per-link load
  // estimates) and returns the route's latency.
  double for_each_link(int src, int dst, const std::function<void(simgrid::s4u::Link*)>& visit) const;
  // The link directions for_each_link visits, appended to `out` as indices
  // (direction() gives the link), and the route's latency: for callers that
  // sum loads per link direction (the tuner's estimates) without hashing
  // links.
  double route_directions(int src, int dst, std::vector<std::uint32_t>& out) const;
  simgrid::s4u::Link* direction(std::uint32_t index) const { return directions_[index]; }

  // ---- The fold (sim/replay/replica_fold.hpp, docs/performance.md "The fold") ----
  // Why the GPU permutation `gpu_image` (one step of a rotation of the
  // data-parallel replicas) is not an automorphism of the cluster: a
  // sentence, empty when it is one (same node groups, local ranks and NICs,
  // nodes onto nodes, NVLink domains onto domains, the fabric onto itself).
  std::string automorphism_problem(const std::vector<int>& gpu_image) const;
  // The link directions with fewer than `order` distinct images under the
  // powers of the automorphism `gpu_image`.
  std::vector<const simgrid::s4u::Link*> short_orbits(const std::vector<int>& gpu_image, int order) const;
  // From now on every route crosses, in place of each link direction, the
  // representative of its orbit under the powers of `gpu_image` (the member
  // created first). for_each_true_link keeps the links themselves.
  void fold_links(const std::vector<int>& gpu_image);
  bool folded() const { return !duplex_image_.empty(); }
  // What the collectives remember of this zone (sim/collectives/factory.cpp:
  // the tuner's choices, expansions), opaque here: a replay asks for the
  // same group's collective thousands of times, and 16,384 GPUs have
  // hundreds of groups of one shape on links alike. It holds while the links
  // do: folding the links and a perturbation's new bandwidth or latency
  // forget it.
  std::shared_ptr<void>& collectives_memo() const { return collectives_memo_; }
  void forget_tuner_choices() const { collectives_memo_.reset(); }
  // While `log` is set, latency_s() and for_each_link() append each
  // (src, dst) they walk to it (what the tuner's choice read); null stops.
  void log_walks(std::vector<std::pair<int, int>>* log) const { walk_log_ = log; }
  // What walking these (src, dst) pairs reads, as bytes: each route's
  // latency and the link directions for_each_link visits, each named by the
  // order of its first appearance in the list, with its bandwidth there.
  // Equal figures of two lists: routes alike, link for link.
  std::string route_figures(const std::vector<std::pair<int, int>>& walks) const;
  // Before a perturbation sets a link's latency (links are built without:
  // routes carry theirs, walk()): get_local_route then adds the hops'.
  void note_link_latency_change() const { link_latency_changed_ = true; }
  // The image of a link direction under one step of the folding
  // automorphism (the link itself when not folded).
  simgrid::s4u::Link* link_image(const simgrid::s4u::Link* link) const;
  // The NVLink domain `domain` maps onto under it.
  int domain_image(int domain) const { return domain_image_[static_cast<std::size_t>(domain)]; }
  double for_each_true_link(int src, int dst, const std::function<void(simgrid::s4u::Link*)>& visit) const;

  // SimGrid asks for the route of every communication it starts. The walk
  // (and the casts of Link::get_impl) run once per (src, dst) pair: the
  // kernel's links and the route's own latency are remembered, and what
  // perturbations add to the links' latencies is read at each call.
  void get_local_route(const simgrid::kernel::routing::NetPoint* src,
                       const simgrid::kernel::routing::NetPoint* dst, simgrid::kernel::routing::Route* into,
                       double* latency) override;
  // Pairs whose route get_local_route remembers (tests).
  std::size_t remembered_routes() const { return kernel_routes_.size(); }

 private:
  struct KernelRoute {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
    double latency_s = 0;
  };

 public:
  // A caller that starts many communications on one pair (the replay's
  // route table: a million on scale-512 with ZeRO-3) keeps a memo per pair
  // and names it just before SimGrid starts one (expect_route): the next
  // get_local_route for that pair reads the remembered route from it
  // rather than looking the pair up (filling it on the pair's first use, and
  // again once fold_links has forgotten the routes). A call for another pair
  // looks up as before; either way the expectation is spent.
  class RouteMemo {
    friend class ClusterZone;
    // A copy, not a pointer into kernel_routes_: the caller's memo is in
    // cache when it starts the communication, the zone's node seldom (the
    // pointer's load was half of get_local_route's samples on scale-16k).
    KernelRoute route_;
    std::uint64_t generation_ = 0;  // the routes' generation it was filled in (0: never)
  };
  void expect_route(int src, int dst, RouteMemo& memo) const {
    expected_src_ = src;
    expected_dst_ = dst;
    expected_ = &memo;
  }
  // Spends an expectation get_local_route was not asked for (the caller
  // calls it once SimGrid's start returns: a memo never outlives its owner
  // in here).
  void expect_no_route() const { expected_ = nullptr; }

 private:
  using Link = simgrid::s4u::Link;
  using Duplex = simgrid::s4u::SplitDuplexLink;
  // Duplex links are named by their index in duplexes_ (kNoLink: none), a
  // link direction by 2 * index + (0 up, 1 down), its index in directions_.
  static constexpr std::uint32_t kNoLink = std::numeric_limits<std::uint32_t>::max();
  struct Gpu {
    simgrid::s4u::Host* host = nullptr;
    int node = 0;
    int local_rank = 0;
    int nic_index = 0;
    std::uint32_t nvlink = kNoLink;  // nvswitch port
    std::uint32_t pcie = kNoLink;
  };
  struct Node {
    int group = 0;
    int first_gpu = 0;
    int domain = 0;
    std::vector<std::uint32_t> nics;
    std::vector<std::uint32_t> lanes;  // cube_mesh, full_mesh: a * g + b for a < b, kNoLink without a link
    bool pcie_on_nic_route = false;
  };

  void build_node(int node, const platforms::NodeGroup& group);
  void build_fabric();
  std::uint32_t duplex(const std::string& name, double bandwidth_Bps);
  // One step of `gpu_image` on every duplex link (indices into duplexes_);
  // empty, with `problem` set, when it is not an automorphism.
  std::vector<std::uint32_t> duplex_images(const std::vector<int>& gpu_image, std::string& problem) const;
  // The representative of a link direction's orbit (itself when not folded).
  std::uint32_t representative(std::uint32_t direction) const {
    return folded() ? 2 * duplex_rep_[direction / 2] + direction % 2 : direction;
  }

  // Calls visit(link direction) along the route from src to dst (endpoint
  // ids) and returns the route's latency.
  template <class F>
  double walk(int src, int dst, F&& visit) const;
  struct NoVisit {
    void operator()(std::uint32_t) const {}
  };

  const platforms::ClusterSpec& spec_;
  std::vector<std::vector<double>> speed_factors_;
  std::vector<Gpu> gpu_;
  std::vector<Node> node_;
  std::vector<simgrid::s4u::Host*> domain_nvswitch_;  // per NVLink domain: its NVLS switch, or nullptr
  std::vector<int> endpoint_of_netpoint_;
  // The fabric's links and routes (platforms/fabric_layout.hpp, one class
  // per topology), and the SimGrid link of each of its links.
  std::unique_ptr<platforms::FabricLayout> fabric_;
  std::vector<std::uint32_t> fabric_links_;
  mutable std::vector<platforms::FabricHop> hops_;  // scratch of walk()
  mutable std::shared_ptr<void> collectives_memo_;
  mutable std::vector<std::uint32_t> figure_labels_;  // scratch of route_figures(), by direction
  mutable std::vector<std::pair<int, int>>* walk_log_ = nullptr;
  // Every duplex link in creation order, and its directions (read there
  // rather than through SimGrid's getters: routes are walked often); the
  // directions by address, sorted, with their index (built by the first
  // link_image()).
  std::vector<Duplex*> duplexes_;
  std::vector<Link*> directions_;
  mutable std::vector<std::pair<const Link*, std::uint32_t>> direction_of_;
  // The fold: one step of the automorphism on duplex links and domains, and
  // each duplex link's orbit representative.
  std::vector<std::uint32_t> duplex_image_;
  std::vector<std::uint32_t> duplex_rep_;
  std::vector<int> domain_image_;
  // get_local_route's routes by (src, dst) endpoints: kernel_hops_[first,
  // first + count), each the link SimGrid shares (the orbit representative
  // under the fold) and the route's own link (whose latency a perturbation
  // may raise), and the walk's latency. fold_links forgets them.
  struct KernelHop {
    simgrid::kernel::resource::StandardLinkImpl* shared;
    const simgrid::s4u::Link* own;
  };
  std::unordered_map<std::uint64_t, KernelRoute> kernel_routes_;
  std::vector<KernelHop> kernel_hops_;
  std::uint64_t routes_generation_ = 1;  // fold_links forgets the routes: the memos' go stale
  mutable int expected_src_ = -1;
  mutable int expected_dst_ = -1;
  mutable RouteMemo* expected_ = nullptr;
  // A perturbation has set a link's latency (note_link_latency_change):
  // get_local_route reads each hop's from then on.
  mutable bool link_latency_changed_ = false;
};

}  // namespace trainsim::sim
