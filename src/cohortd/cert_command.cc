// cohortd cert: the cluster's CA and the certificates it signs (docs/security.md).
#include <fmt/format.h>

#include "cohortd/commands.h"
#include "tls/certificates.h"

namespace cohort::cohortd {
namespace {

int Failed(std::string_view command, const Status& status) {
  fmt::print(stderr, "cohortd cert {}: {}\n", command, status.message());
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

int RunCa(const CertOptions& o) {
  auto ca = tls::CreateCa(o.dir, o.force);
  if (!ca.ok()) return Failed("ca", ca.status());
  fmt::print("wrote {}: the CA's certificate; give it to agents and clients (--ca-file)\n",
             ca->cert);
  fmt::print(
      "wrote {}: its private key (mode 0600); keep it secret: it signs certificates the "
      "cluster trusts\n",
      ca->key);
  fmt::print("next: cohortd cert issue --ca-dir {} --name master --host <master's names>\n", o.dir);
  return 0;
}

int RunIssue(const CertOptions& o) {
  auto issued =
      tls::IssueCertificate(tls::IssueRequest{o.ca_dir, o.name, o.hosts, o.out_dir, o.days});
  if (!issued.ok()) return Failed("issue", issued.status());
  std::string hosts;
  for (const auto& h : o.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
  fmt::print("wrote {}: for {}, valid {} days, signed by {}\n", issued->cert, hosts, o.days,
             tls::CaFilesIn(o.ca_dir).cert);
  fmt::print("wrote {}: its private key (mode 0600)\n", issued->key);
  fmt::print("use them with: cohortd master --tls-cert {} --tls-key {}\n", issued->cert,
             issued->key);
  return 0;
}

}  // namespace

void AddCertCommand(CLI::App& app, CertOptions& o) {
  auto* cert = app.add_subcommand(
      "cert", "Make certificates for HTTPS: the cluster's CA, and certificates it signs");
  cert->require_subcommand(1);

  auto* ca = cert->add_subcommand(
      "ca",
      "Create the cluster's CA: DIR/ca.crt (give it to agents and clients as --ca-file) "
      "and DIR/ca.key (secret, mode 0600); EC P-256, valid 10 years");
  ca->add_option("--dir", o.dir, "Where to write ca.crt and ca.key (created if missing)")
      ->required();
  ca->add_flag("--force", o.force,
               "Replace an existing CA; every certificate the old one signed stops being trusted");
  ca->callback([&o] {
    if (int rc = RunCa(o)) throw CLI::RuntimeError(rc);
  });

  auto* issue = cert->add_subcommand(
      "issue",
      "Sign a certificate with the cluster's CA: OUT/NAME.crt and OUT/NAME.key (mode "
      "0600), for serverAuth and clientAuth; issuing again renews it");
  issue->add_option("--ca-dir", o.ca_dir, "The CA's directory (cohortd cert ca --dir)")->required();
  issue->add_option("--name", o.name, "The files' name and the certificate's, e.g. master")
      ->required();
  issue
      ->add_option("--host", o.hosts,
                   "The DNS names and IP addresses clients use to reach it, comma-separated or "
                   "repeated, e.g. master.example.com,10.0.0.5")
      ->required()
      ->delimiter(',');
  issue->add_option("--out", o.out_dir, "Where to write the files (default: the CA's directory)");
  issue->add_option("--days", o.days, "How long the certificate is valid")->capture_default_str();
  issue->callback([&o] {
    if (int rc = RunIssue(o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace cohort::cohortd
