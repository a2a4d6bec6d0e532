//! Writes the webhook manifests (`manifests.yaml`: both webhook configurations and the
//! `kruise-webhook-service` Service; `crd-conversion/webhook_in_<plural>.yaml`: the CRD patches
//! turning the conversion webhook on) into the directory given as argument (default
//! `config/webhook`). With `--check`, compares instead and exits 1 listing stale files.

fn main() -> std::process::ExitCode {
    kruise_manager::manifests::generator_main(
        "kruise-webhookgen",
        "config/webhook",
        &kruise_webhook::controller::manifests(),
    )
}
