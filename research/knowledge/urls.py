from django.urls import path

app_name = "knowledge"
urlpatterns: list = []
